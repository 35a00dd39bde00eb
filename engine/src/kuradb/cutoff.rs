//! The semantic cutoff of `kb_search` (SPEC.md §15.4): which semantic
//! hits are close enough to the query to be shown.
//!
//! Most models' cosines mean the same for every query, and one absolute
//! cutoff serves. e5-small-v2's sit high and move with the query (unrelated
//! pairs 0.68-0.84): there a hit must beat the query's own baseline, its
//! similarity to the mean vector of 64 fixed passages ([`E5_ANCHOR_MEAN`]),
//! by [`E5_MARGIN`].

use crate::embed::ModelIdentity;

/// Semantic hits under this similarity are cut, for a model with no
/// calibrated cutoff (KuraDB's 0.3, chosen for OpenAI's vectors).
pub const MIN_SIMILARITY: f32 = 0.3;
/// The cutoff for the local all-MiniLM-L6-v2, calibrated by `kb_bench
/// calibrate` (SPEC.md §15.4): the equal-error point, where as many
/// unrelated query/passage pairs pass as passages holding the query are cut
/// (about 5.5% each; at 0.3, 2.5% and 9.7%).
pub const MINILM_MIN_SIMILARITY: f32 = 0.25;
/// How far e5-small-v2's similarity must exceed the query's baseline
/// (`q · E5_ANCHOR_MEAN`): the equal-error point of the calibration pairs,
/// 4.8% of unrelated pairs kept and of containing pairs cut (an absolute
/// cutoff's best was 6.4%, at 0.815, and cut paraphrases; SPEC.md §15.4).
pub const E5_MARGIN: f32 = 0.035;

/// How a model's semantic hits are cut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SemanticCut {
    /// Kept when the similarity is at least this.
    Absolute(f32),
    /// Kept when the similarity exceeds the query's similarity to `mean`
    /// (not normalised) by at least `margin`.
    AboveBaseline {
        /// The least excess kept.
        margin: f32,
        /// The mean of the anchor passages' vectors.
        mean: &'static [f32; 384],
    },
}

impl SemanticCut {
    /// Whether a hit of `similarity` to the query whose vector is `query`
    /// is kept. A baseline rule without the query's vector (or of another
    /// dimension) keeps nothing.
    pub fn keeps(&self, similarity: f32, query: Option<&[f32]>) -> bool {
        match *self {
            SemanticCut::Absolute(cut) => similarity >= cut,
            SemanticCut::AboveBaseline { margin, mean } => {
                query.filter(|q| q.len() == mean.len()).is_some_and(|q| {
                    let baseline: f32 = q.iter().zip(mean).map(|(a, b)| a * b).sum();
                    similarity - baseline >= margin
                })
            }
        }
    }
}

/// The semantic cutoff of `kb_search` for vectors of `model`.
pub fn semantic_cut(model: &ModelIdentity) -> SemanticCut {
    let name = model.name.as_str();
    if model.provider != crate::embed::LOCAL_PROVIDER {
        SemanticCut::Absolute(MIN_SIMILARITY)
    } else if [crate::embed::LOCAL_NAME, crate::embed::LOCAL_NAME_INT8].contains(&name) {
        SemanticCut::Absolute(MINILM_MIN_SIMILARITY)
    } else if name == crate::embed::LOCAL_NAME_E5 {
        SemanticCut::AboveBaseline {
            margin: E5_MARGIN,
            mean: &E5_ANCHOR_MEAN,
        }
    } else {
        SemanticCut::Absolute(MIN_SIMILARITY)
    }
}

/// The mean of e5-small-v2's vectors (identity `e5-small-v2-int8-rows`) of
/// the 64 passages in `benches/kb/e5_anchors.txt` (three turns each of 64
/// chitchat conversations, MIT; drawn with seed 11 from conversations no
/// calibration pair uses), each embedded as a passage. The suite recomputes
/// it (`kuradb::the_e5_baseline_is_the_anchors_mean`).
#[rustfmt::skip]
pub const E5_ANCHOR_MEAN: [f32; 384] = [
    -6.5567535e-02, 1.1187586e-02, 1.8242788e-02, 6.3478591e-03, -2.2071409e-02, 1.8905971e-02,
    6.3714222e-02, -4.1184360e-02, 3.6919503e-03, 5.0533368e-02, 3.1767095e-02, -1.8393644e-02,
    -3.5300471e-02, 3.9929337e-02, 1.8257918e-02, -3.6617395e-02, -2.0575509e-02, 3.2716598e-02,
    -1.3355428e-01, 5.0711441e-02, 4.5761290e-02, -5.5792607e-02, 8.6157080e-03, -4.8646917e-02,
    -1.9296793e-02, 1.3085942e-02, 4.9225817e-02, 5.4927209e-02, -5.0239604e-02, -9.5790830e-02,
    -4.3669497e-02, 1.4257337e-02, 2.1244157e-02, -4.4902473e-02, 6.0404450e-02, -3.2333776e-02,
    4.6116024e-03, 4.5663035e-02, 3.0410270e-02, 4.7186446e-02, -2.6746067e-02, -4.5892680e-02,
    4.3062102e-02, -5.2024534e-02, 3.6069407e-03, -5.2069103e-03, -4.2802098e-02, -5.1313423e-02,
    9.1487929e-02, -5.8037110e-03, -3.5419040e-02, 1.3848882e-02, 6.4472885e-02, 4.8504901e-02,
    2.1981885e-02, 6.4055035e-02, 4.6768914e-02, 3.5272138e-02, 5.3039546e-02, 7.7768501e-02,
    1.4216462e-03, 4.7356450e-02, -1.3299551e-01, 1.3813885e-01, 9.2364219e-02, 5.8647534e-02,
    -2.0788114e-02, 1.6027492e-02, -1.5670917e-02, -2.7617374e-02, 1.6504448e-03, 3.8574790e-02,
    -2.4699368e-02, 5.5810039e-02, -3.7612163e-02, 4.7991834e-02, 1.8886421e-02, 6.0562765e-02,
    -4.7295490e-02, -5.1193811e-03, -1.6563869e-02, -3.6151619e-02, -4.0002650e-02, 2.0818276e-02,
    -2.3171646e-02, -2.9432738e-02, 3.9940972e-02, -1.7718410e-02, -2.1985585e-02, -3.6155348e-02,
    -2.5290170e-02, -1.7958464e-02, 4.3975324e-02, -2.2696279e-02, -6.3854120e-03, -2.2724447e-02,
    4.6853590e-02, 3.6307577e-02, -4.0666207e-02, 5.0526637e-02, 2.0695745e-02, 5.2966969e-04,
    -1.7259474e-03, -5.0221863e-02, -2.6211304e-02, -2.7219527e-02, 1.8149818e-03, 5.5033391e-03,
    4.3220003e-02, -1.5574656e-02, -3.5656512e-02, -3.4778233e-02, 3.7956090e-02, -2.9738155e-02,
    3.6719283e-02, 5.4430999e-02, -1.3366873e-02, -4.7343532e-02, -3.6835418e-02, 1.1960405e-02,
    4.4625536e-02, 1.9260845e-02, 2.0001059e-02, -2.2618276e-02, 4.3061434e-02, -5.3145085e-02,
    6.6578283e-02, 9.6478437e-02, 6.2121669e-02, -2.7620223e-02, 6.2305390e-02, -2.3981736e-02,
    1.5242190e-02, -2.6405795e-02, -5.0962741e-02, -1.9358680e-02, -4.0909700e-02, -6.6069906e-03,
    6.3345479e-02, 1.8855988e-02, -3.4506772e-02, -5.4767181e-02, -1.1997871e-02, -9.0056909e-02,
    2.1646150e-03, 2.9614676e-02, -8.0467709e-02, 3.3642252e-02, -5.1895990e-02, -3.2490054e-02,
    -5.6565138e-02, -2.1453341e-02, 3.4951376e-02, -2.7372668e-02, -4.5056799e-03, 2.0875345e-02,
    2.0249187e-02, 4.3769276e-02, -4.0945486e-02, -1.3931333e-02, -9.8629927e-02, -3.4729980e-02,
    5.1598360e-02, 8.6891306e-02, 2.2320446e-02, -1.0982393e-01, 2.5126879e-02, -1.6961049e-02,
    3.7966120e-02, -3.5904427e-02, -2.3119854e-03, 5.5378110e-02, 1.7553864e-02, 4.2623911e-03,
    9.7352004e-02, -3.2944971e-02, -5.9616994e-02, -2.5576955e-02, 5.0830445e-02, -5.7861755e-02,
    5.8062963e-02, -4.6750419e-02, -2.1430475e-02, 3.3623356e-02, 7.1038511e-02, -3.7639396e-02,
    -5.3623963e-02, -3.9216119e-02, -1.0108907e-02, -2.4850506e-02, -4.5706936e-02, -1.5808437e-02,
    -3.0062923e-02, 4.3816114e-02, 2.0484575e-02, 6.4385640e-03, -3.5741484e-02, -4.6941074e-02,
    -2.5305029e-02, -5.4960465e-02, 5.5641918e-02, 4.2955989e-02, -4.0211923e-02, 9.1059562e-03,
    -3.8196298e-02, 5.1462777e-02, 2.2026412e-02, -3.4613053e-02, -5.4624691e-03, -1.7617248e-02,
    -2.8357025e-02, -1.1468303e-02, 6.8830648e-03, -4.5664939e-02, -3.6536074e-02, -4.5455465e-02,
    1.3363406e-02, 8.6445989e-03, 4.2305917e-02, 1.1245965e-02, 3.4900809e-02, -7.3022397e-02,
    -3.7440208e-02, -1.4277262e-01, -3.1137271e-02, -7.5869245e-02, -3.5091924e-02, 7.7062216e-02,
    -2.0992686e-02, -6.2229261e-03, 3.6962063e-02, -3.0934971e-02, 4.5864007e-02, 5.0265496e-02,
    -3.7449897e-02, -2.7969748e-02, -3.3104277e-02, 1.7896694e-02, 4.7208606e-02, -2.2408397e-02,
    -2.2958620e-02, 7.2770717e-02, -2.8149027e-02, -4.0049739e-02, -6.7567943e-02, -4.1251544e-02,
    -5.9750253e-02, 9.4726739e-03, -4.0786340e-02, 1.1677505e-01, 7.7992923e-02, 3.5990278e-02,
    -2.7126388e-02, 3.8780663e-02, 3.8727836e-02, 4.3601602e-02, -9.6408892e-02, 9.1459084e-02,
    -4.0523092e-02, 1.0682448e-02, 3.2079629e-02, -2.4626129e-02, -6.4972714e-02, 5.0256465e-02,
    -2.9693230e-02, 1.3276511e-02, -7.6423046e-02, 7.1999052e-02, -4.8037213e-02, -2.9433264e-02,
    4.1253867e-02, -2.8897199e-02, -6.2097074e-03, 1.8228241e-02, -5.3432304e-02, 5.4317436e-02,
    -2.2687456e-02, -6.2771828e-02, -2.4014792e-02, -7.8618832e-02, 1.5965348e-02, -1.4774391e-02,
    9.1168562e-03, -5.1948233e-02, -2.2597511e-02, 3.5724350e-02, -1.7051706e-02, 2.0661207e-03,
    7.5652285e-02, -3.2679455e-02, 7.1916893e-03, -4.2948964e-02, -4.4207132e-02, 2.5493580e-03,
    7.1312020e-02, -4.7405026e-02, 1.0785264e-02, 7.4047506e-02, 5.9395815e-02, 5.3664106e-02,
    -3.1755710e-03, -2.3403032e-02, -5.4262624e-02, -2.5890578e-02, -6.7625233e-02, 1.8141981e-02,
    5.4375262e-02, 1.0538783e-02, -3.0313137e-02, -3.4144989e-03, -3.8146604e-02, 1.1817248e-02,
    -4.8723525e-02, 3.8420801e-02, -3.8999040e-02, 6.1601371e-02, 3.5472023e-02, 3.7422114e-03,
    -2.9325873e-02, -1.5525365e-01, -3.1114231e-02, 4.9247397e-02, 2.7313706e-02, 9.4581448e-03,
    2.5812290e-02, 2.9074798e-02, -2.5767930e-02, -3.7875451e-02, -3.4173712e-02, 3.6435846e-02,
    9.3973109e-03, 7.2516490e-02, -3.1712703e-02, -6.4965830e-03, 2.7860972e-02, 7.9638083e-02,
    1.6219243e-02, -2.3677482e-02, -5.6444127e-02, 2.5675478e-02, 1.4973849e-02, 1.4419730e-01,
    8.8319665e-03, 1.3897703e-03, 5.4814826e-02, 3.7318831e-02, 4.6737954e-02, 1.2709870e-02,
    3.4440339e-02, -1.0475221e-02, -3.8363739e-02, 9.1769814e-02, -1.5170463e-02, 5.7850579e-02,
    9.2382580e-02, -1.2165534e-02, 3.2760246e-02, 1.2928371e-02, -1.2394402e-02, 4.9545323e-02,
    7.1167384e-02, -2.0312559e-02, -3.5067146e-02, 1.1114124e-01, -1.0036585e-02, -6.0030271e-02,
    9.6540933e-03, -1.3807013e-02, -4.4796418e-02, -4.1982050e-02, -4.0026865e-03, 6.3101257e-02,
    5.7116955e-02, 4.4125490e-02, -5.5412459e-02, -6.8161923e-02, -4.4777443e-03, -2.8365916e-02,
    -6.5284184e-02, 1.2238313e-02, -1.7438927e-02, 8.9167982e-03, -3.4264751e-02, 3.2678396e-02,
];
