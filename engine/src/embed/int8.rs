//! Int8 products for the local model (SPEC.md §23.4).
//!
//! The pinned export stores its weights as int8 with a float scale per
//! output channel, turned back into floats by a `Cast` and a `Mul` in front
//! of each `MatMul` and embedding `Gather`. ONNX Runtime folds those into
//! float weights at load (90 MB, and 42 MB more per session for the
//! re-packed copies its float GEMM reads), then multiplies in floats.
//!
//! [`int8_products`] rewrites the graph so the weights stay int8:
//! - `MatMul(x, Mul(Cast(W), s))` becomes an int8 product: each row of `x`
//!   (one token's activations) is quantized on its own, symmetric, to
//!   `round(x / (max|x| / 127))`, shifted by 128 into `uint8`;
//!   `MatMulInteger` (zero point 128) multiplies it with `W`, and the int32
//!   result is scaled back by the row's scale times `s`. A row's scale
//!   depends on that row only, so a text's vector does not depend on the
//!   other texts of its batch or on their padding (a per-tensor scale, as
//!   ONNX Runtime's `quantize_dynamic` makes, moved vectors by up to 0.02 in
//!   cosine between batched and single calls).
//! - `Gather(Mul(Cast(E), s), ids)` becomes `Mul(Cast(Gather(E, ids)),
//!   Gather(s, ids))`: the same floats, computed for the gathered rows only.
//!
//! [`row_quantized_products`] does the same for a model already exported
//! with int8 products (e5-small-v2's): ONNX Runtime's `quantize_dynamic`
//! writes `DynamicQuantizeLinear` in front of each group of products, one
//! scale for the whole batch, so a text's vector moved with its batch (by
//! up to 0.007 in cosine). Each such node becomes the per-row quantizer
//! above, and each of its products is scaled back by the row's scale.
//!
//! How the weights enter the integer products depends on the CPU
//! ([`unsigned_weights_here`]). ONNX Runtime's `uint8` x `int8` kernel is
//! exact where the CPU multiplies and adds bytes into 32 bits (VNNI, AMX,
//! ARM's dot products), but on x86-64 without VNNI (AVX2, AVX-512 without
//! VNNI) it adds pairs of products in 16-bit lanes that saturate
//! (`VPMADDUBSW`): nearly every output of a product was off there, and a
//! text embedded on such a CPU moved by up to 0.04 in cosine (MiniLM;
//! 0.002 with e5) from the same text on a VNNI one. There the weights are
//! multiplied as `uint8` instead (each int8 value plus 128, weight zero
//! point 128): `uint8` x `uint8` kernels widen before they multiply and
//! are exact, at 1.4-1.6x the time, which is why a CPU with VNNI keeps the
//! signed kernel. The two graphs compute the same integers, so vectors
//! agree across CPUs up to what float operators round differently, which
//! the activations' quantization can turn into a step of one (cosine
//! 0.999+; benches/README.md, "The same vectors on every CPU").
//!
//! Everything else in the model is copied byte for byte.

use std::collections::{HashMap, HashSet};

use super::protowire::{Field, fields, put_bytes, put_uint, put_varint};

/// The version of what [`int8_products`] writes, part of the name of the
/// optimized model cached from it (`local.rs`, `cache_path`): bump it when
/// the rewrite's output changes, so no cache of an older rewrite is read.
pub(crate) const REWRITE_VERSION: u32 = 1;

/// Whether this process multiplies int8 weights as `uint8` (the module
/// doc): on x86-64 unless the CPU has AVX-512 VNNI or AVX-VNNI. The
/// environment variable `MEMDB_INT8_WEIGHTS` (`signed` or `unsigned`)
/// overrides the choice, for measurement.
pub(crate) fn unsigned_weights_here() -> bool {
    match std::env::var("MEMDB_INT8_WEIGHTS").as_deref() {
        Ok("signed") => return false,
        Ok("unsigned") => return true,
        _ => {}
    }
    #[cfg(target_arch = "x86_64")]
    {
        !(std::arch::is_x86_feature_detected!("avx512vnni")
            || std::arch::is_x86_feature_detected!("avxvnni"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

// ONNX field numbers (onnx.proto).
const MODEL_GRAPH: u32 = 7;
const GRAPH_NODE: u32 = 1;
const GRAPH_INITIALIZER: u32 = 5;
const GRAPH_OUTPUT: u32 = 12;
const VALUE_INFO_NAME: u32 = 1;
const NODE_INPUT: u32 = 1;
const NODE_OUTPUT: u32 = 2;
const NODE_NAME: u32 = 3;
const NODE_OP_TYPE: u32 = 4;
const NODE_ATTRIBUTE: u32 = 5;
const NODE_DOMAIN: u32 = 7;
const ATTR_NAME: u32 = 1;
const ATTR_I: u32 = 3;
const ATTR_INTS: u32 = 8;
const ATTR_TYPE: u32 = 20;
const ATTR_TYPE_INT: u64 = 2;
const ATTR_TYPE_INTS: u64 = 7;
const TENSOR_DATA_TYPE: u32 = 2;
const TENSOR_INT32_DATA: u32 = 5;
const TENSOR_NAME: u32 = 8;
const TENSOR_RAW_DATA: u32 = 9;
const TENSOR_EXTERNAL_DATA: u32 = 13;
const TENSOR_DATA_LOCATION: u32 = 14;
const FLOAT: u64 = 1;
const UINT8: u64 = 2;
const INT8: u64 = 3;

/// Prefix of every name the rewrite adds.
const PREFIX: &str = "memdb_i8";

/// A node of the graph, as read.
struct Node<'a> {
    raw: &'a [u8],
    inputs: Vec<&'a str>,
    outputs: Vec<&'a str>,
    op: &'a str,
    domain: &'a str,
    attributes: Vec<&'a [u8]>,
}

impl<'a> Node<'a> {
    /// Op, domain, inputs and outputs, to match a node's form in one
    /// pattern.
    fn form(&self) -> (&'a str, &'a str, &[&'a str], &[&'a str]) {
        (self.op, self.domain, &self.inputs, &self.outputs)
    }

    /// The value of integer attribute `name`, if the node has it.
    fn int_attribute(&self, name: &str) -> Option<i64> {
        self.attributes.iter().find_map(|a| {
            let f = fields(a).ok()?;
            let named = f
                .iter()
                .any(|x| x.number == ATTR_NAME && x.str() == Some(name));
            let value = f.iter().find(|x| x.number == ATTR_I)?.varint()?;
            named.then_some(value as i64)
        })
    }
}

fn node<'a>(raw: &'a [u8], body: &'a [u8]) -> Result<Node<'a>, String> {
    let mut n = Node {
        raw,
        inputs: Vec::new(),
        outputs: Vec::new(),
        op: "",
        domain: "",
        attributes: Vec::new(),
    };
    for f in fields(body)? {
        let text = || f.str().ok_or("a node field is not UTF-8 text");
        match f.number {
            NODE_INPUT => n.inputs.push(text()?),
            NODE_OUTPUT => n.outputs.push(text()?),
            NODE_OP_TYPE => n.op = text()?,
            NODE_DOMAIN => n.domain = text()?,
            NODE_ATTRIBUTE => n
                .attributes
                .push(f.bytes().ok_or("an attribute is not a message")?),
            _ => {}
        }
    }
    Ok(n)
}

/// What replaces one weight's `Cast`, `Mul` and consumer.
enum Rewrite<'a> {
    MatMul {
        x: &'a str,
        weight: &'a str,
        scale: &'a str,
        out: &'a str,
    },
    Gather {
        ids: &'a str,
        weight: &'a str,
        scale: &'a str,
        out: &'a str,
        attributes: Vec<&'a [u8]>,
    },
}

/// Writes new nodes and names them uniquely.
struct Emitter {
    out: Vec<u8>,
    next: usize,
}

impl Emitter {
    /// Quantizes each row (last axis) of `x` on its own: `q` (`uint8`) =
    /// `round(x / s) + 128` with `s = max(max|x|, 1e-8) / 127`, one scale
    /// per row, written to `s`.
    fn quantize_rows(&mut self, x: &str, q: &str, s: &str) {
        let (eps, c127, c128) = (
            format!("{PREFIX}_eps"),
            format!("{PREFIX}_127"),
            format!("{PREFIX}_128"),
        );
        let row_max = [ints_attribute("axes", &[-1]), int_attribute("keepdims", 1)];
        let (abs, max, floor, div, round, shifted) = (
            self.name("abs"),
            self.name("max"),
            self.name("floor"),
            self.name("div"),
            self.name("round"),
            self.name("shifted"),
        );
        self.node("Abs", &[x], &[&abs], &[]);
        self.node("ReduceMax", &[&abs], &[&max], &row_max);
        self.node("Max", &[&max, &eps], &[&floor], &[]);
        self.node("Div", &[&floor, &c127], &[s], &[]);
        self.node("Div", &[x, s], &[&div], &[]);
        self.node("Round", &[&div], &[&round], &[]);
        self.node("Add", &[&round, &c128], &[&shifted], &[]);
        self.node(
            "Cast",
            &[&shifted],
            &[q],
            &[int_attribute("to", UINT8 as i64)],
        );
    }

    fn name(&mut self, what: &str) -> String {
        self.next += 1;
        format!("{PREFIX}_{}_{what}", self.next)
    }

    fn node(&mut self, op: &str, inputs: &[&str], outputs: &[&str], attributes: &[Vec<u8>]) {
        let mut body = Vec::new();
        for i in inputs {
            put_bytes(&mut body, NODE_INPUT, i.as_bytes());
        }
        for o in outputs {
            put_bytes(&mut body, NODE_OUTPUT, o.as_bytes());
        }
        let name = self.name(op);
        put_bytes(&mut body, NODE_NAME, name.as_bytes());
        put_bytes(&mut body, NODE_OP_TYPE, op.as_bytes());
        for a in attributes {
            put_bytes(&mut body, NODE_ATTRIBUTE, a);
        }
        put_bytes(&mut self.out, GRAPH_NODE, &body);
    }
}

fn int_attribute(name: &str, v: i64) -> Vec<u8> {
    let mut a = Vec::new();
    put_bytes(&mut a, ATTR_NAME, name.as_bytes());
    put_uint(&mut a, ATTR_I, v as u64);
    put_uint(&mut a, ATTR_TYPE, ATTR_TYPE_INT);
    a
}

fn ints_attribute(name: &str, v: &[i64]) -> Vec<u8> {
    let mut a = Vec::new();
    put_bytes(&mut a, ATTR_NAME, name.as_bytes());
    for &x in v {
        put_uint(&mut a, ATTR_INTS, x as u64);
    }
    put_uint(&mut a, ATTR_TYPE, ATTR_TYPE_INTS);
    a
}

fn scalar(out: &mut Vec<u8>, name: &str, data_type: u64, bytes: &[u8]) {
    let mut t = Vec::new();
    put_uint(&mut t, TENSOR_DATA_TYPE, data_type);
    put_bytes(&mut t, TENSOR_NAME, name.as_bytes());
    put_bytes(&mut t, TENSOR_RAW_DATA, bytes);
    put_bytes(out, GRAPH_INITIALIZER, &t);
}

/// The model with its int8 weights multiplied as int8 (see the module
/// doc). An error when the model is not an ONNX model or holds no int8
/// weight in the `Cast`/`Mul` form.
pub(crate) fn int8_products(model: &[u8], unsigned: bool) -> Result<Vec<u8>, String> {
    let g = read_graph(model)?;
    let (nodes, int8, initializers) = (&g.nodes, &g.int8, &g.initializers);
    let sole = |name: &str| g.sole(name);

    let mut removed = vec![false; nodes.len()];
    let mut rewrites: HashMap<usize, Rewrite> = HashMap::new();
    for (c, cast) in nodes.iter().enumerate() {
        let weight = match cast.form() {
            ("Cast", "", &[w], &[_])
                if int8.contains(w) && cast.int_attribute("to") == Some(FLOAT as i64) =>
            {
                w
            }
            _ => continue,
        };
        let Some(m) = sole(cast.outputs[0]) else {
            continue;
        };
        let mul = &nodes[m];
        let scale = match mul.form() {
            ("Mul", "", &[a, b], &[_]) if a == cast.outputs[0] && initializers.contains(b) => b,
            ("Mul", "", &[a, b], &[_]) if b == cast.outputs[0] && initializers.contains(a) => a,
            _ => continue,
        };
        let Some(u) = sole(mul.outputs[0]) else {
            continue;
        };
        let user = &nodes[u];
        let rewrite = match user.form() {
            ("MatMul", "", &[x, w], &[out])
                if w == mul.outputs[0] && user.attributes.is_empty() =>
            {
                Rewrite::MatMul {
                    x,
                    weight,
                    scale,
                    out,
                }
            }
            // Rows only: the scales are gathered the same way.
            ("Gather", "", &[e, ids], &[out])
                if e == mul.outputs[0] && user.int_attribute("axis").unwrap_or(0) == 0 =>
            {
                Rewrite::Gather {
                    ids,
                    weight,
                    scale,
                    out,
                    attributes: user.attributes.clone(),
                }
            }
            _ => continue,
        };
        removed[c] = true;
        removed[m] = true;
        rewrites.insert(u, rewrite);
    }
    if rewrites.is_empty() {
        return Err("the model has no int8 weight behind a Cast and a Mul".into());
    }
    // All or nothing: a weight left in floats would be a form this rewrite
    // does not know, and the model is refused rather than half converted.
    let casts = nodes
        .iter()
        .filter(|n| n.op == "Cast" && n.inputs.first().is_some_and(|w| int8.contains(w)))
        .count();
    if casts != rewrites.len() {
        return Err(format!(
            "{} of the model's {casts} int8 weights are in a form this rewrite does not know",
            casts - rewrites.len()
        ));
    }

    // The weights multiplied as uint8 (when `unsigned`): read by their
    // Cast alone.
    let mut to_uint8 = HashSet::new();
    for r in rewrites.values().filter(|_| unsigned) {
        if let Rewrite::MatMul { weight, .. } = r {
            if g.readers(weight) != 1 {
                return Err(format!(
                    "int8 weight {weight} is read by {} nodes; the rewrite needs it read once",
                    g.readers(weight)
                ));
            }
            to_uint8.insert(*weight);
        }
    }

    let zp = zero_point_name();
    let to_float = [int_attribute("to", FLOAT as i64)];
    let mut e = Emitter {
        out: Vec::new(),
        next: 0,
    };
    // Activations quantized once per tensor name (Q, K and V share theirs):
    // the name of the uint8 rows and of their scales.
    let mut quantized: HashMap<&str, (String, String)> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if removed[i] {
            continue;
        }
        match rewrites.get(&i) {
            None => e.out.extend_from_slice(n.raw),
            Some(&Rewrite::MatMul {
                x,
                weight,
                scale,
                out,
            }) => {
                if !quantized.contains_key(x) {
                    let (q, s) = (e.name("q"), e.name("scale"));
                    e.quantize_rows(x, &q, &s);
                    quantized.insert(x, (q, s));
                }
                let (q, s) = quantized[x].clone();
                let (product, as_float, rescaled) =
                    (e.name("product"), e.name("float"), e.name("rescaled"));
                if unsigned {
                    e.node("MatMulInteger", &[&q, weight, &zp, &zp], &[&product], &[]);
                } else {
                    e.node("MatMulInteger", &[&q, weight, &zp], &[&product], &[]);
                }
                e.node("Cast", &[&product], &[&as_float], &to_float);
                e.node("Mul", &[&as_float, &s], &[&rescaled], &[]);
                e.node("Mul", &[&rescaled, scale], &[out], &[]);
            }
            Some(Rewrite::Gather {
                ids,
                weight,
                scale,
                out,
                attributes,
            }) => {
                let attributes: Vec<Vec<u8>> = attributes.iter().map(|a| a.to_vec()).collect();
                let (rows, as_float, scales) = (e.name("rows"), e.name("float"), e.name("scales"));
                e.node("Gather", &[weight, ids], &[&rows], &attributes);
                e.node("Cast", &[&rows], &[&as_float], &to_float);
                e.node("Gather", &[scale, ids], &[&scales], &attributes);
                e.node("Mul", &[&as_float, &scales], &[*out], &[]);
            }
        }
    }
    assemble(&g.top, &g.fields, e.out, model.len(), &to_uint8)
}

/// The name of the constant zero point (128, `uint8`) of quantized rows
/// and of the weights the first rewrite turns into `uint8`.
fn zero_point_name() -> String {
    format!("{PREFIX}_zero_point")
}

/// The model `top` with its graph's nodes replaced by `nodes`, the
/// initializers named in `to_uint8` turned from int8 into uint8 ([`as_uint8`]),
/// every other graph field kept, and the quantizer's constants added.
fn assemble(
    top: &[Field<'_>],
    graph_fields: &[Field<'_>],
    nodes: Vec<u8>,
    size: usize,
    to_uint8: &HashSet<&str>,
) -> Result<Vec<u8>, String> {
    let mut new_graph = nodes;
    for f in graph_fields {
        match f.number {
            GRAPH_NODE => {}
            GRAPH_INITIALIZER => {
                let tensor = f.bytes().ok_or("an initializer is not a message")?;
                let name = fields(tensor)?
                    .iter()
                    .find(|t| t.number == TENSOR_NAME)
                    .and_then(|t| t.str());
                if name.is_some_and(|n| to_uint8.contains(n)) {
                    put_bytes(&mut new_graph, GRAPH_INITIALIZER, &as_uint8(tensor)?);
                } else {
                    new_graph.extend_from_slice(f.raw);
                }
            }
            _ => new_graph.extend_from_slice(f.raw),
        }
    }
    scalar(
        &mut new_graph,
        &format!("{PREFIX}_eps"),
        FLOAT,
        &1e-8f32.to_le_bytes(),
    );
    scalar(
        &mut new_graph,
        &format!("{PREFIX}_127"),
        FLOAT,
        &127f32.to_le_bytes(),
    );
    scalar(
        &mut new_graph,
        &format!("{PREFIX}_128"),
        FLOAT,
        &128f32.to_le_bytes(),
    );
    scalar(&mut new_graph, &zero_point_name(), UINT8, &[128]);

    let mut out = Vec::with_capacity(size + 4096);
    for f in top {
        if f.number == MODEL_GRAPH {
            put_bytes(&mut out, MODEL_GRAPH, &new_graph);
        } else {
            out.extend_from_slice(f.raw);
        }
    }
    Ok(out)
}

/// An int8 tensor as uint8 with the same meaning under a zero point 128
/// higher: each value plus 128 (`^ 0x80` on raw bytes), the type `uint8`.
/// Raw bytes and int32 data are converted; external data is refused.
fn as_uint8(tensor: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(tensor.len());
    for t in fields(tensor)? {
        match t.number {
            TENSOR_DATA_TYPE => put_uint(&mut out, TENSOR_DATA_TYPE, UINT8),
            TENSOR_RAW_DATA => {
                let shifted: Vec<u8> = t
                    .bytes()
                    .ok_or("a tensor's raw data is not bytes")?
                    .iter()
                    .map(|b| b ^ 0x80)
                    .collect();
                put_bytes(&mut out, TENSOR_RAW_DATA, &shifted);
            }
            // int8 values held as int32 (a small tensor, e.g. a zero point):
            // packed or one by one, rewritten packed.
            TENSOR_INT32_DATA => {
                let mut values = Vec::new();
                match t.value {
                    super::protowire::Value::Varint(v) => values.push(v),
                    super::protowire::Value::Bytes(b) => {
                        let mut pos = 0;
                        while pos < b.len() {
                            values.push(super::protowire::read_varint(b, &mut pos)?);
                        }
                    }
                    super::protowire::Value::Fixed(_) => {
                        return Err("an int8 weight's int32 data is not a varint".into());
                    }
                }
                let mut packed = Vec::new();
                for v in values {
                    let v = v as i64 as i32;
                    if !(-128..=127).contains(&v) {
                        return Err(format!("an int8 weight holds {v}"));
                    }
                    put_varint(&mut packed, (v + 128) as u64);
                }
                put_bytes(&mut out, TENSOR_INT32_DATA, &packed);
            }
            TENSOR_EXTERNAL_DATA | TENSOR_DATA_LOCATION => {
                return Err("an int8 weight is stored outside the model".into());
            }
            _ => out.extend_from_slice(t.raw),
        }
    }
    Ok(out)
}

/// A model's graph, read: its top-level fields, the graph's fields, its
/// nodes, the names of its initializers and of its int8 ones, its outputs,
/// and which nodes read each name.
struct Graph<'a> {
    top: Vec<Field<'a>>,
    fields: Vec<Field<'a>>,
    nodes: Vec<Node<'a>>,
    initializers: HashSet<&'a str>,
    int8: HashSet<&'a str>,
    outputs: HashSet<&'a str>,
    consumers: HashMap<&'a str, Vec<usize>>,
}

impl Graph<'_> {
    /// The one node reading `name`, when nothing else (no graph output)
    /// reads it.
    fn sole(&self, name: &str) -> Option<usize> {
        match self.consumers.get(name).map(Vec::as_slice) {
            Some(&[i]) if !self.outputs.contains(name) => Some(i),
            _ => None,
        }
    }

    /// How many nodes read `name`.
    fn readers(&self, name: &str) -> usize {
        self.consumers.get(name).map_or(0, Vec::len)
    }
}

fn read_graph(model: &[u8]) -> Result<Graph<'_>, String> {
    let top = fields(model)?;
    let mut graphs = top.iter().filter(|f| f.number == MODEL_GRAPH);
    let graph = graphs
        .next()
        .and_then(Field::bytes)
        .ok_or("the model has no graph")?;
    if graphs.next().is_some() {
        return Err("the model has two graphs".into());
    }
    let graph_fields = fields(graph)?;
    let mut g = Graph {
        top: Vec::new(),
        fields: Vec::new(),
        nodes: Vec::new(),
        initializers: HashSet::new(),
        int8: HashSet::new(),
        outputs: HashSet::new(),
        consumers: HashMap::new(),
    };
    for f in &graph_fields {
        match f.number {
            GRAPH_NODE => g
                .nodes
                .push(node(f.raw, f.bytes().ok_or("a node is not a message")?)?),
            GRAPH_INITIALIZER => {
                let mut name = None;
                let mut data_type = None;
                for t in fields(f.bytes().ok_or("an initializer is not a message")?)? {
                    match t.number {
                        TENSOR_NAME => name = t.str(),
                        TENSOR_DATA_TYPE => data_type = t.varint(),
                        _ => {}
                    }
                }
                let name = name.ok_or("an initializer has no name")?;
                if name.starts_with(PREFIX) {
                    return Err(format!("the model already has a name starting {PREFIX}"));
                }
                g.initializers.insert(name);
                if data_type == Some(INT8) {
                    g.int8.insert(name);
                }
            }
            GRAPH_OUTPUT => {
                for v in fields(f.bytes().ok_or("an output is not a message")?)? {
                    if v.number == VALUE_INFO_NAME {
                        g.outputs
                            .insert(v.str().ok_or("an output name is not text")?);
                    }
                }
            }
            _ => {}
        }
    }
    for (i, n) in g.nodes.iter().enumerate() {
        for &input in &n.inputs {
            g.consumers.entry(input).or_default().push(i);
        }
    }
    g.top = top;
    g.fields = graph_fields;
    Ok(g)
}

/// A `MatMulInteger` of a dynamically quantized activation, with the
/// `Cast`, the scale product and the `Mul` that turn it back into floats.
struct DynamicProduct<'a> {
    /// The `MatMulInteger` node and its weight and weight zero point.
    product: usize,
    weight: &'a str,
    weight_zero_point: &'a str,
    /// The weight's scale (the other factor of the scale product).
    weight_scale: &'a str,
    /// The float result (the last `Mul`'s output).
    out: &'a str,
    /// The activation's `DynamicQuantizeLinear` node.
    quantizer: usize,
    /// The `Cast`, the scale product and the last `Mul`: removed.
    removed: [usize; 3],
}

/// The model with every `DynamicQuantizeLinear` in front of int8 products
/// replaced by per-row quantization (see the module doc). An error when the
/// model is not an ONNX model, has no such node, or reads one's outputs in
/// any other way (all or nothing, as [`int8_products`]).
pub(crate) fn row_quantized_products(model: &[u8], unsigned: bool) -> Result<Vec<u8>, String> {
    let g = read_graph(model)?;
    let nodes = &g.nodes;
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for &o in &n.outputs {
            producer.insert(o, i);
        }
    }
    let sole = |name: &str| g.sole(name);
    let quantizers: HashMap<usize, [&str; 4]> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n.form() {
            ("DynamicQuantizeLinear", "", &[x], &[q, s, z]) => Some((i, [x, q, s, z])),
            _ => None,
        })
        .collect();
    if quantizers.is_empty() {
        return Err("the model has no DynamicQuantizeLinear node".into());
    }
    let quantizer_of: HashMap<&str, usize> =
        quantizers.iter().map(|(&i, names)| (names[1], i)).collect();
    let mut products = Vec::new();
    for (p, n) in nodes.iter().enumerate() {
        let ("MatMulInteger", "", &[q, weight, zp, weight_zero_point], &[int_out]) = n.form()
        else {
            continue;
        };
        let Some(&quantizer) = quantizer_of.get(q) else {
            continue;
        };
        let [_, _, x_scale, x_zp] = quantizers[&quantizer];
        if zp != x_zp || !g.int8.contains(weight) {
            continue;
        }
        let Some(c) = sole(int_out) else { continue };
        let cast = &nodes[c];
        if cast.form().0 != "Cast" || cast.int_attribute("to") != Some(FLOAT as i64) {
            continue;
        }
        let Some(m) = sole(cast.outputs[0]) else {
            continue;
        };
        let (scales, out) = match nodes[m].form() {
            ("Mul", "", &[a, b], &[out]) if a == cast.outputs[0] => (b, out),
            ("Mul", "", &[a, b], &[out]) if b == cast.outputs[0] => (a, out),
            _ => continue,
        };
        let Some(&sp) = producer.get(scales) else {
            continue;
        };
        if sole(scales) != Some(m) {
            continue;
        }
        let weight_scale = match nodes[sp].form() {
            ("Mul", "", &[a, b], &[_]) if a == x_scale && g.initializers.contains(b) => b,
            ("Mul", "", &[a, b], &[_]) if b == x_scale && g.initializers.contains(a) => a,
            _ => continue,
        };
        products.push(DynamicProduct {
            product: p,
            weight,
            weight_zero_point,
            weight_scale,
            out,
            quantizer,
            removed: [c, sp, m],
        });
    }
    // All or nothing: every reader of a quantizer's outputs is one of the
    // products found (its MatMulInteger or its scale product).
    let mut readers = 0;
    for names in quantizers.values() {
        for name in &names[1..] {
            if g.outputs.contains(name) {
                return Err(format!("{name} is a graph output"));
            }
            readers += g.readers(name);
        }
    }
    // Each product reads the rows and the zero point, its scale product the scale.
    if readers != 3 * products.len() {
        return Err(format!(
            "the model's quantized activations are read by {readers} nodes, {} of them in a form this rewrite does not know",
            readers - 3 * products.len().min(readers / 3)
        ));
    }

    // Each weight and weight zero point becomes uint8; every reader of one
    // must be a product found, which all read it the same way.
    let mut to_uint8 = HashSet::new();
    for d in products.iter().filter(|_| unsigned) {
        to_uint8.insert(d.weight);
        to_uint8.insert(d.weight_zero_point);
    }
    for name in &to_uint8 {
        if !g.initializers.contains(name) {
            return Err(format!("{name} is not a constant"));
        }
        let ours = products
            .iter()
            .filter(|d| d.weight == *name || d.weight_zero_point == *name)
            .count();
        if g.readers(name) != ours {
            return Err(format!(
                "{name} is read by {} nodes, {ours} of them products this rewrite knows",
                g.readers(name)
            ));
        }
    }

    let zp = zero_point_name();
    let to_float = [int_attribute("to", FLOAT as i64)];
    let mut removed = vec![false; nodes.len()];
    let mut at: HashMap<usize, &DynamicProduct> = HashMap::new();
    for d in &products {
        for r in d.removed {
            removed[r] = true;
        }
        at.insert(d.product, d);
    }
    let mut e = Emitter {
        out: Vec::new(),
        next: 0,
    };
    for (i, n) in nodes.iter().enumerate() {
        if removed[i] {
            continue;
        }
        if let Some([x, q, s, _]) = quantizers.get(&i) {
            e.quantize_rows(x, q, s);
        } else if let Some(d) = at.get(&i) {
            let [_, q, s, _] = quantizers[&d.quantizer];
            let (product, as_float, rescaled) =
                (e.name("product"), e.name("float"), e.name("rescaled"));
            e.node(
                "MatMulInteger",
                &[q, d.weight, &zp, d.weight_zero_point],
                &[&product],
                &[],
            );
            e.node("Cast", &[&product], &[&as_float], &to_float);
            // Two products, not one with the scales multiplied first: ONNX
            // Runtime fuses `Mul(Cast(MatMulInteger), Mul(a, b))` into an
            // operator that reads the activation scale as one number.
            e.node("Mul", &[&as_float, s], &[&rescaled], &[]);
            e.node("Mul", &[&rescaled, d.weight_scale], &[d.out], &[]);
        } else {
            e.out.extend_from_slice(n.raw);
        }
    }
    assemble(&g.top, &g.fields, e.out, model.len(), &to_uint8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ops a row quantizer is written as, in order.
    const QUANTIZER: [&str; 8] = [
        "Abs",
        "ReduceMax",
        "Max",
        "Div",
        "Div",
        "Round",
        "Add",
        "Cast",
    ];
    /// The ops an int8 product and its scaling back are written as.
    const PRODUCT: [&str; 4] = ["MatMulInteger", "Cast", "Mul", "Mul"];

    /// A graph `y = MatMul(x, Mul(Cast(W, to), s))` plus an unrelated node.
    fn tiny_model(cast_to: i64) -> Vec<u8> {
        let mut e = Emitter {
            out: Vec::new(),
            next: 100,
        };
        e.node("Cast", &["W"], &["Wf"], &[int_attribute("to", cast_to)]);
        e.node("Mul", &["Wf", "s"], &["Wd"], &[]);
        e.node("MatMul", &["x", "Wd"], &["y"], &[]);
        e.node("Relu", &["y"], &["z"], &[]);
        let mut graph = e.out;
        let mut w = Vec::new();
        put_uint(&mut w, TENSOR_DATA_TYPE, INT8);
        put_bytes(&mut w, TENSOR_NAME, b"W");
        put_bytes(&mut graph, GRAPH_INITIALIZER, &w);
        scalar(&mut graph, "s", FLOAT, &0.5f32.to_le_bytes());
        let mut model = Vec::new();
        put_uint(&mut model, 1, 8); // ir_version
        put_bytes(&mut model, MODEL_GRAPH, &graph);
        model
    }

    /// Each node's op and outputs, in order.
    fn ops(model: &[u8]) -> Vec<(String, Vec<String>)> {
        let graph = fields(model)
            .unwrap()
            .into_iter()
            .find(|f| f.number == MODEL_GRAPH)
            .and_then(|f| f.bytes())
            .unwrap();
        fields(graph)
            .unwrap()
            .into_iter()
            .filter(|f| f.number == GRAPH_NODE)
            .map(|f| {
                let n = node(f.raw, f.bytes().unwrap()).unwrap();
                (
                    n.op.to_string(),
                    n.outputs.iter().map(|o| o.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_dequantized_matmul_becomes_an_int8_product() {
        let out = int8_products(&tiny_model(FLOAT as i64), false).unwrap();
        let nodes = ops(&out);
        let names: Vec<&str> = nodes.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, [&QUANTIZER[..], &PRODUCT, &["Relu"]].concat());
        // The ir_version field is kept, and the constants are added.
        let top = fields(&out).unwrap();
        assert_eq!((top[0].number, top[0].varint()), (1, Some(8)));
        let graph = fields(top[1].bytes().unwrap()).unwrap();
        let inits = graph
            .iter()
            .filter(|f| f.number == GRAPH_INITIALIZER)
            .count();
        assert_eq!(inits, 2 + 4);
        // The last Mul writes the MatMul's output, which Relu still reads.
        assert_eq!(nodes[11], ("Mul".to_string(), vec!["y".to_string()]));
        assert_eq!(nodes[12], ("Relu".to_string(), vec!["z".to_string()]));
    }

    /// `DynamicQuantizeLinear(x)` read by two int8 products (as Q and K
    /// read theirs), each scaled back by `Mul(Cast(.), Mul(x_scale, s))`.
    fn dynamic_model(extra_reader: bool) -> Vec<u8> {
        let mut e = Emitter {
            out: Vec::new(),
            next: 100,
        };
        e.node("DynamicQuantizeLinear", &["x"], &["xq", "xs", "xz"], &[]);
        for w in ["A", "B"] {
            let (p, f, sm, y) = (
                format!("{w}_int"),
                format!("{w}_float"),
                format!("{w}_scales"),
                format!("{w}_y"),
            );
            let (ws, wz) = (format!("{w}_s"), format!("{w}_z"));
            e.node("MatMulInteger", &["xq", w, "xz", &wz], &[&p], &[]);
            e.node("Cast", &[&p], &[&f], &[int_attribute("to", FLOAT as i64)]);
            e.node("Mul", &["xs", &ws], &[&sm], &[]);
            e.node("Mul", &[&f, &sm], &[&y], &[]);
        }
        if extra_reader {
            e.node("Identity", &["xs"], &["leak"], &[]);
        }
        let mut graph = e.out;
        for w in ["A", "B"] {
            let mut t = Vec::new();
            put_uint(&mut t, TENSOR_DATA_TYPE, INT8);
            put_bytes(&mut t, TENSOR_NAME, w.as_bytes());
            put_bytes(&mut graph, GRAPH_INITIALIZER, &t);
            scalar(&mut graph, &format!("{w}_s"), FLOAT, &0.5f32.to_le_bytes());
            scalar(&mut graph, &format!("{w}_z"), INT8, &[0]);
        }
        let mut model = Vec::new();
        put_bytes(&mut model, MODEL_GRAPH, &graph);
        model
    }

    #[test]
    fn a_dynamically_quantized_product_is_quantized_per_row() {
        let out = row_quantized_products(&dynamic_model(false), false).unwrap();
        let nodes = ops(&out);
        let names: Vec<&str> = nodes.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, [&QUANTIZER[..], &PRODUCT, &PRODUCT].concat());
        // The quantizer writes the rows and scale under their old names,
        // and each product ends in the old output.
        assert_eq!(nodes[3].1, ["xs"]);
        assert_eq!(nodes[7].1, ["xq"]);
        assert_eq!(nodes[11].1, ["A_y"]);
        assert_eq!(nodes[15].1, ["B_y"]);
        // A scale read by anything else: refused whole.
        let e = row_quantized_products(&dynamic_model(true), false).unwrap_err();
        assert!(e.contains("read by 7 nodes"), "{e}");
        // No DynamicQuantizeLinear at all: refused.
        assert!(row_quantized_products(&tiny_model(FLOAT as i64), false).is_err());
    }

    /// The data type and raw bytes of initializer `name` of `model`.
    fn initializer(model: &[u8], name: &str) -> (u64, Vec<u8>) {
        let top = fields(model).unwrap();
        let graph = top
            .iter()
            .find(|f| f.number == MODEL_GRAPH)
            .and_then(|f| f.bytes())
            .unwrap();
        for f in fields(graph).unwrap() {
            if f.number != GRAPH_INITIALIZER {
                continue;
            }
            let t = fields(f.bytes().unwrap()).unwrap();
            if t.iter()
                .any(|x| x.number == TENSOR_NAME && x.str() == Some(name))
            {
                let dt = t
                    .iter()
                    .find(|x| x.number == TENSOR_DATA_TYPE)
                    .and_then(|x| x.varint());
                let raw = t
                    .iter()
                    .find(|x| x.number == TENSOR_RAW_DATA)
                    .and_then(|x| x.bytes())
                    .unwrap_or_default();
                return (dt.unwrap_or(0), raw.to_vec());
            }
        }
        panic!("no initializer {name}");
    }

    #[test]
    fn weights_are_multiplied_as_uint8_with_the_same_meaning() {
        // int8 -> uint8 is +128 on every byte: -128 -> 0, -1 -> 127, 0 ->
        // 128, 127 -> 255; other tensor fields are kept.
        let mut t = Vec::new();
        put_uint(&mut t, TENSOR_DATA_TYPE, INT8);
        put_bytes(&mut t, TENSOR_NAME, b"W");
        put_bytes(&mut t, TENSOR_RAW_DATA, &[0x80, 0xff, 0x00, 0x7f]);
        let u = as_uint8(&t).unwrap();
        let f = fields(&u).unwrap();
        assert_eq!(f[0].varint(), Some(UINT8));
        assert_eq!(f[1].str(), Some("W"));
        assert_eq!(f[2].bytes(), Some(&[0u8, 127, 128, 255][..]));
        // Values held as int32 data (packed, or one by one): -1 is a
        // ten-byte varint; each becomes value + 128, packed.
        let mut packed = Vec::new();
        put_uint(&mut packed, TENSOR_DATA_TYPE, INT8);
        let mut values = Vec::new();
        put_varint(&mut values, 5);
        put_varint(&mut values, (-1i64) as u64);
        put_bytes(&mut packed, TENSOR_INT32_DATA, &values);
        put_uint(&mut packed, TENSOR_INT32_DATA, (-128i64) as u64);
        let u = as_uint8(&packed).unwrap();
        let f = fields(&u).unwrap();
        assert_eq!(
            f[1].bytes(),
            Some(&[133u8, 1, 127][..]),
            "133 is two varint bytes"
        );
        assert_eq!(f[2].bytes(), Some(&[0u8][..]));
        // Out of int8's range, or stored outside the model: refused.
        let mut bad = Vec::new();
        put_uint(&mut bad, TENSOR_INT32_DATA, 300);
        assert!(as_uint8(&bad).is_err());
        let mut external = Vec::new();
        put_uint(&mut external, TENSOR_DATA_LOCATION, 1);
        assert!(as_uint8(&external).is_err());

        // The first rewrite: the weight becomes uint8 and its product reads
        // the zero point 128 for it.
        let out = int8_products(&tiny_model(FLOAT as i64), true).unwrap();
        assert_eq!(initializer(&out, "W").0, UINT8);
        let top = fields(&out).unwrap();
        let graph = top[1].bytes().unwrap();
        let graph_fields = fields(graph).unwrap();
        let product = graph_fields
            .iter()
            .filter(|f| f.number == GRAPH_NODE)
            .map(|f| node(f.raw, f.bytes().unwrap()).unwrap())
            .find(|n| n.op == "MatMulInteger")
            .unwrap();
        let zp = zero_point_name();
        assert_eq!(product.inputs[1..], ["W", zp.as_str(), zp.as_str()]);
        // The second: each weight and its zero point (int8 0 -> uint8 128).
        let out = row_quantized_products(&dynamic_model(false), true).unwrap();
        for w in ["A", "B"] {
            assert_eq!(initializer(&out, w).0, UINT8);
            assert_eq!(initializer(&out, &format!("{w}_z")), (UINT8, vec![128]));
        }
        assert_eq!(initializer(&out, "A_s").0, FLOAT, "scales are untouched");
        // Signed (a CPU with VNNI): the weights stay int8.
        let out = row_quantized_products(&dynamic_model(false), false).unwrap();
        assert_eq!(initializer(&out, "A").0, INT8);
        assert_eq!(initializer(&out, "A_z"), (INT8, vec![0]));
        let out = int8_products(&tiny_model(FLOAT as i64), false).unwrap();
        assert_eq!(initializer(&out, "W").0, INT8);
    }

    #[test]
    fn a_model_without_int8_weights_is_refused() {
        let mut e = Emitter {
            out: Vec::new(),
            next: 0,
        };
        e.node("MatMul", &["x", "W"], &["y"], &[]);
        let mut model = Vec::new();
        put_bytes(&mut model, MODEL_GRAPH, &e.out);
        assert!(int8_products(&model, false).is_err());
        // An int8 weight cast to another type than float is not rewritten,
        // and a model with one such weight is refused whole.
        assert!(int8_products(&tiny_model(10), false).is_err());
        let mut two = tiny_model(FLOAT as i64);
        let extra = {
            let mut e = Emitter {
                out: Vec::new(),
                next: 200,
            };
            e.node("Cast", &["W"], &["Wh"], &[int_attribute("to", 10)]);
            e.out
        };
        // Append the node to the graph: re-encode the graph field.
        let top = fields(&two).unwrap();
        let mut graph = top[1].bytes().unwrap().to_vec();
        graph.extend_from_slice(&extra);
        two.clear();
        put_uint(&mut two, 1, 8);
        put_bytes(&mut two, MODEL_GRAPH, &graph);
        let e = int8_products(&two, false).unwrap_err();
        assert!(e.contains("1 of the model's 2 int8 weights"), "{e}");
        assert!(int8_products(b"\x0b", false).is_err());
        assert!(int8_products(&[], false).is_err());
    }
}
