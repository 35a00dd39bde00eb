//! The semantic cutoff of `KuraDb::search` (SPEC.md §15.4): which semantic
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

/// The semantic cutoff of `KuraDb::search` for vectors of `model`.
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
/// it (`kuradb::the_e5_baseline_is_the_anchors_mean`). Computed with the
/// int8 products exact (uint8 weights, rewrite version 2), so it holds on
/// every x86-64 CPU; the earlier constant was an AVX2 machine's saturated
/// products, 8.7e-4 away in the worst dimension.
#[rustfmt::skip]
pub const E5_ANCHOR_MEAN: [f32; 384] = [
    -6.5508865e-2, 1.0764747e-2, 1.807539e-2, 6.345967e-3, -2.1680005e-2, 1.88036e-2,
    6.303344e-2, -4.11375e-2, 3.451214e-3, 5.0724678e-2, 3.2011945e-2, -1.8187106e-2,
    -3.5294108e-2, 4.0112324e-2, 1.8537663e-2, -3.65568e-2, -2.0788971e-2, 3.3000495e-2,
    -1.3315019e-1, 5.0788824e-2, 4.5546602e-2, -5.5912443e-2, 8.670554e-3, -4.920756e-2,
    -1.9057786e-2, 1.3387139e-2, 4.91544e-2, 5.512822e-2, -5.0264746e-2, -9.5755585e-2,
    -4.3600775e-2, 1.4239918e-2, 2.1181228e-2, -4.498017e-2, 6.017007e-2, -3.2258414e-2,
    4.518187e-3, 4.5546755e-2, 3.028046e-2, 4.7098506e-2, -2.6960677e-2, -4.5660224e-2,
    4.285579e-2, -5.237208e-2, 3.64602e-3, -5.187672e-3, -4.2554945e-2, -5.1203296e-2,
    9.133964e-2, -5.846391e-3, -3.546373e-2, 1.3816052e-2, 6.483112e-2, 4.8252076e-2,
    2.2029305e-2, 6.4331025e-2, 4.6668768e-2, 3.5556883e-2, 5.3493276e-2, 7.772954e-2,
    1.339083e-3, 4.7454208e-2, -1.3339184e-1, 1.380008e-1, 9.231063e-2, 5.8402877e-2,
    -2.0429403e-2, 1.5910283e-2, -1.5714008e-2, -2.7799778e-2, 1.639538e-3, 3.8778413e-2,
    -2.4890149e-2, 5.6194823e-2, -3.7758928e-2, 4.7956068e-2, 1.9185979e-2, 5.9969686e-2,
    -4.7239844e-2, -5.382497e-3, -1.6257914e-2, -3.614283e-2, -4.0071398e-2, 2.0763936e-2,
    -2.3212573e-2, -2.9422894e-2, 4.0044717e-2, -1.7683242e-2, -2.1976968e-2, -3.5696585e-2,
    -2.495183e-2, -1.761332e-2, 4.3897994e-2, -2.2784686e-2, -6.418912e-3, -2.2691457e-2,
    4.626617e-2, 3.630664e-2, -4.0768888e-2, 5.0364684e-2, 2.067602e-2, 7.25037e-4,
    -1.572052e-3, -5.015446e-2, -2.594921e-2, -2.6913414e-2, 1.66165e-3, 5.311979e-3,
    4.3644335e-2, -1.5073992e-2, -3.5843376e-2, -3.491729e-2, 3.8154997e-2, -2.954499e-2,
    3.7034445e-2, 5.4215595e-2, -1.3379776e-2, -4.7444355e-2, -3.6599185e-2, 1.2264448e-2,
    4.463742e-2, 1.8960448e-2, 2.0403355e-2, -2.267216e-2, 4.304697e-2, -5.3256106e-2,
    6.639319e-2, 9.662243e-2, 6.1967004e-2, -2.7455749e-2, 6.2349107e-2, -2.383697e-2,
    1.5794668e-2, -2.6314091e-2, -5.0821982e-2, -1.944999e-2, -4.0953904e-2, -6.523272e-3,
    6.356389e-2, 1.9097084e-2, -3.466393e-2, -5.499075e-2, -1.2103148e-2, -9.0290986e-2,
    2.402118e-3, 2.970789e-2, -7.9827435e-2, 3.33795e-2, -5.1691156e-2, -3.237979e-2,
    -5.65318e-2, -2.1502638e-2, 3.5416447e-2, -2.7415877e-2, -4.539562e-3, 2.0685723e-2,
    2.0142233e-2, 4.3698642e-2, -4.104464e-2, -1.3723802e-2, -9.836331e-2, -3.420571e-2,
    5.1323686e-2, 8.70483e-2, 2.229465e-2, -1.0977592e-1, 2.516001e-2, -1.7501706e-2,
    3.8094863e-2, -3.5995375e-2, -2.379655e-3, 5.57974e-2, 1.7447641e-2, 4.009812e-3,
    9.7657755e-2, -3.318278e-2, -5.9812494e-2, -2.568041e-2, 5.0588444e-2, -5.8297116e-2,
    5.8020312e-2, -4.6871517e-2, -2.155504e-2, 3.3880454e-2, 7.0753984e-2, -3.726605e-2,
    -5.394187e-2, -3.919611e-2, -1.0356149e-2, -2.4971087e-2, -4.577264e-2, -1.5497112e-2,
    -3.0527562e-2, 4.384888e-2, 2.024648e-2, 7.286058e-3, -3.5522584e-2, -4.711813e-2,
    -2.5350792e-2, -5.535984e-2, 5.5441543e-2, 4.3144222e-2, -4.009133e-2, 9.091117e-3,
    -3.8143672e-2, 5.1422786e-2, 2.1946447e-2, -3.4518972e-2, -5.274978e-3, -1.7463561e-2,
    -2.7868604e-2, -1.1166453e-2, 7.199723e-3, -4.5458347e-2, -3.655115e-2, -4.5301467e-2,
    1.3313881e-2, 8.860232e-3, 4.278312e-2, 1.1508263e-2, 3.5070285e-2, -7.312982e-2,
    -3.7050672e-2, -1.4317733e-1, -3.1075919e-2, -7.6130114e-2, -3.4814e-2, 7.658242e-2,
    -2.1201752e-2, -6.405225e-3, 3.673612e-2, -3.1213097e-2, 4.5746025e-2, 4.9977385e-2,
    -3.74623e-2, -2.7871981e-2, -3.3200536e-2, 1.7966567e-2, 4.7044896e-2, -2.2352347e-2,
    -2.2989044e-2, 7.282894e-2, -2.8327903e-2, -4.0210456e-2, -6.703944e-2, -4.149382e-2,
    -5.9818715e-2, 9.512879e-3, -4.0978435e-2, 1.1684151e-1, 7.7954024e-2, 3.6065716e-2,
    -2.6877904e-2, 3.8502526e-2, 3.88268e-2, 4.3720856e-2, -9.655469e-2, 9.127744e-2,
    -4.1092053e-2, 1.0881282e-2, 3.244572e-2, -2.4124982e-2, -6.526189e-2, 5.0070155e-2,
    -2.9289098e-2, 1.2881965e-2, -7.641571e-2, 7.181042e-2, -4.7979854e-2, -2.9426448e-2,
    4.0809292e-2, -2.8371198e-2, -5.978747e-3, 1.8202411e-2, -5.361155e-2, 5.4174878e-2,
    -2.3193348e-2, -6.264152e-2, -2.4158267e-2, -7.926644e-2, 1.5491812e-2, -1.4544053e-2,
    9.067128e-3, -5.181709e-2, -2.2775492e-2, 3.5792183e-2, -1.7154975e-2, 2.49048e-3,
    7.533595e-2, -3.2481346e-2, 7.098433e-3, -4.316222e-2, -4.417444e-2, 2.398887e-3,
    7.124261e-2, -4.726706e-2, 1.0805718e-2, 7.429834e-2, 5.9302375e-2, 5.3559925e-2,
    -3.400177e-3, -2.3607723e-2, -5.4109488e-2, -2.5900288e-2, -6.769313e-2, 1.8383237e-2,
    5.4454666e-2, 1.0575641e-2, -3.0338217e-2, -3.32779e-3, -3.861884e-2, 1.206796e-2,
    -4.8727553e-2, 3.8387958e-2, -3.907329e-2, 6.1453547e-2, 3.5777483e-2, 3.8966e-3,
    -2.9605806e-2, -1.552507e-1, -3.051299e-2, 4.9652252e-2, 2.7082518e-2, 9.712657e-3,
    2.5294725e-2, 2.902091e-2, -2.56134e-2, -3.8131e-2, -3.4215327e-2, 3.6548298e-2,
    9.265117e-3, 7.242255e-2, -3.231438e-2, -6.444525e-3, 2.8402133e-2, 7.9512976e-2,
    1.6104013e-2, -2.3774667e-2, -5.6348596e-2, 2.604432e-2, 1.482811e-2, 1.4429736e-1,
    8.424427e-3, 1.686902e-3, 5.482375e-2, 3.730814e-2, 4.720114e-2, 1.2561821e-2,
    3.4511987e-2, -1.0781588e-2, -3.8472228e-2, 9.2024185e-2, -1.5204315e-2, 5.763585e-2,
    9.22822e-2, -1.1937547e-2, 3.271951e-2, 1.3297922e-2, -1.240285e-2, 4.9667243e-2,
    7.107923e-2, -2.017985e-2, -3.4863733e-2, 1.1095843e-1, -9.904562e-3, -5.984788e-2,
    8.932367e-3, -1.3732288e-2, -4.432655e-2, -4.1592278e-2, -4.598173e-3, 6.2917024e-2,
    5.713831e-2, 4.4253606e-2, -5.5633094e-2, -6.775401e-2, -4.723206e-3, -2.8623773e-2,
    -6.574573e-2, 1.2607302e-2, -1.8309522e-2, 8.872709e-3, -3.454753e-2, 3.263561e-2,
];
