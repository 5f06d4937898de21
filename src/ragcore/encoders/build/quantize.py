"""Dynamic int8 quantisation of a fused BERT graph, with SmoothQuant-style
per-channel scaling of the activations that have outlier channels.

onnxruntime's dynamic quantisation gives each activation tensor one scale per
call. The LayerNorm outputs of all-MiniLM-L6-v2 have a few channels far larger
than the rest, so one scale leaves the others a handful of levels: quantising
every product lost up to 0.017 of cosine to fp32. Dividing each input channel j
by s_j = max|x_j|^a / max|W_j|^(1-a) and multiplying row j of the weights by s_j
leaves the product unchanged in exact arithmetic and moves the outliers into the
(per-channel quantised) weights (Xiao et al., "SmoothQuant", 2023). The FFN's
second product, whose input is the GELU output, loses most in int8 with or
without scaling: quantised so too, the check texts fell below the cosine to fp32
and lost the nearest neighbours the recipe must hold (derived.py). It stays fp32
in one recipe ("int8-ffn-fp32"); the default one (ffn_output_blocks) gives it
onnxruntime's MatMulNBits instead: 8-bit weights with a scale per block of
FFN_OUTPUT_BLOCK input channels, and its input quantised to int8 per row and
block (accuracy level 4), so an outlier moves the scale of its block only. Its
weights take a quarter of the bytes, which is what a short query waits for.
The agreement of the kept model with fp32 is in BENCHMARKS.md, "Encoder throughput" (its
min cosine column).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._denormals import thread_state_kept

# Operators the dynamic int8 quantisation adds to the fused fp32 graph: the rows of
# a call meet only through its activation scales (one per call), so a call may be
# cut into pieces of its rows at other bits, within the recipe's check (derived.py).
# MatMulNBits quantises its input per row and block, but its kernel (so its bits) may
# depend on the rows of the call.
PER_CALL_SCALE_OPERATORS = frozenset({"DynamicQuantizeLinear", "MatMulInteger", "Mul", "QAttention",
                                      "MatMulNBits"})
FFN_OUTPUT_BLOCK = 32

SMOOTH_ALPHA = 0.8
# Texts for the activation ranges: varied, and none of them a check text.
CALIBRATION_TEXTS = (
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "Install the package with pip and import it in your script.",
    "The function returns None if the key is missing from the mapping.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "SELECT name, count(*) FROM users GROUP BY name ORDER BY 2 DESC;",
    "The meeting was moved to Thursday at 3 pm because of the holiday.",
    "Gradient descent updates the parameters in the direction of steepest descent.",
    "A hash table maps keys to values with expected constant-time lookups.",
    "The river flooded the valley after a week of heavy rain.",
    "error: could not open file 'config.yaml' (permission denied)",
    "Sie können das Formular online ausfüllen und per E-Mail senden.",
    "Tokyo, Osaka and Kyoto are among the largest cities in Japan.",
    "Use a context manager so the socket is closed even when an exception is raised.",
    "The patient was advised to rest and drink plenty of fluids.",
    "Quarterly revenue rose 12% while operating costs stayed flat.",
    "for i in range(10): print(i ** 2)",
    "Mitochondria are the powerhouse of the cell.",
    "Search engines rank documents by their relevance to a query.",
    "The orchestra played Beethoven's ninth symphony to a full hall.",
) + ("Long documents are split into overlapping chunks before they are embedded. " * 12,)


def write_int8(fp32: Path, out: Path, tokenizer, smooth: bool = True,
               seven_bit_weights: bool = False, ffn_output_blocks: bool = False) -> dict:
    """Writes the int8 model of the fused fp32 graph at fp32 to out: products of
    the attention (QKV and output) and the FFN's first product in int8 (weights per
    output channel, uint8 activations per call), after smoothing their inputs
    (smooth=True); the FFN's second product stays fp32, or with ffn_output_blocks
    is a MatMulNBits of 8-bit weights in blocks (see above); the embeddings stay fp32.
    seven_bit_weights: weights in [-64, 63] (onnxruntime's reduce_range). Without
    VNNI, onnxruntime multiplies uint8 by int8 with vpmaddubsw, whose sum of two
    products saturates at int16 with 8-bit weights and cannot with 7-bit ones.
    tokenizer: a TextTokenizer for the calibration texts. Returns what to record."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32))
    inits = {init.name: init for init in model.graph.initializer}
    products = [n for n in model.graph.node if n.op_type in ("Attention", "MatMul")
                and len(n.input) > 1 and n.input[1] in inits]
    kept_fp32 = [n.name for n in products if _is_ffn_output(n.name)]
    int8 = [n for n in products if n.name not in kept_fp32]
    if smooth:
        _smooth(model, int8, _activation_ranges(fp32, int8, tokenizer), SMOOTH_ALPHA)
    smoothed = out.with_name("smoothed.onnx")
    onnx.save(model, str(smoothed))
    quantize_dynamic(str(smoothed), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=seven_bit_weights,
                     op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=kept_fp32,
                     extra_options={"MatMulConstBOnly": True,
                                    "DefaultTensorType": onnx.TensorProto.FLOAT})
    smoothed.unlink()
    if ffn_output_blocks:
        _ffn_output_in_blocks(out, kept_fp32)
    ops = [node.op_type for node in onnx.load(str(out), load_external_data=False).graph.node]
    return {"precision": "int8", "quantized_from": str(fp32), "products_int8": len(int8),
            "products_fp32": ops.count("MatMul"),
            "products_8bit_blocks": ops.count("MatMulNBits"),
            "ffn_output_block": FFN_OUTPUT_BLOCK if ffn_output_blocks else None,
            "smooth_alpha": SMOOTH_ALPHA if smooth else None,
            "weight_bits": 7 if seven_bit_weights else 8,
            "int8_operators": {op: ops.count(op) for op in ("MatMulInteger", "QAttention")}}


def _ffn_output_in_blocks(path: Path, names: list) -> None:
    """The named fp32 MatMuls of the model at path as MatMulNBits: symmetric 8-bit
    weights, a scale per FFN_OUTPUT_BLOCK input channels, int8 products (accuracy
    level 4). Rewrites the file."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(onnx.load(str(path)), bits=8, block_size=FFN_OUTPUT_BLOCK,
                                     is_symmetric=True, accuracy_level=4, nodes_to_include=names,
                                     op_types_to_quantize=("MatMul",))
    quantizer.process()
    converted = [n.name for n in quantizer.model.model.graph.node if n.op_type == "MatMulNBits"]
    if len(converted) != len(names):
        raise RuntimeError(f"MatMulNBits: {len(converted)} of the {len(names)} FFN output "
                           "products converted")
    quantizer.model.save_model_to_file(str(path))


def _is_ffn_output(name: str) -> bool:
    """The FFN's second product (…/layer.N/output/dense/MatMul), not the attention's."""
    return "/output/dense/" in name and "/attention/" not in name


def _activation_ranges(fp32: Path, nodes, tokenizer) -> dict:
    """max |x| per channel of each node's input over the calibration texts (one text
    per run, so no padding enters)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    probe = onnx.load(str(fp32))
    names = sorted({n.input[0] for n in nodes})
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    with thread_state_kept():  # onnxruntime may change it at a process's first session
        session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    ranges = {name: 0.0 for name in names}
    for text in CALIBRATION_TEXTS:
        batch = tokenizer.encode([text])
        feeds = {i.name: getattr(batch, i.name) for i in session.get_inputs()}
        for name, value in zip(names, session.run(names, feeds)):
            ranges[name] = np.maximum(ranges[name], np.abs(value.reshape(-1, value.shape[-1])).max(axis=0))
    return ranges


def _smooth(model, nodes, ranges: dict, alpha: float) -> None:
    """x W -> (x / s)(s W) for each node: a Mul by 1/s inserted before it, and its
    weight initializer scaled in place."""
    from onnx import helper, numpy_helper

    inits = {init.name: init for init in model.graph.initializer}
    targets = {id(n) for n in nodes}
    rebuilt = []
    for node in model.graph.node:
        if id(node) in targets:
            weight = numpy_helper.to_array(inits[node.input[1]])
            w_range = np.maximum(np.abs(weight).max(axis=1), 1e-8)
            scale = np.clip(ranges[node.input[0]] ** alpha / w_range ** (1 - alpha), 1e-4, 1e4)
            scale = scale.astype(np.float32)
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(
                (weight * scale[:, None]).astype(np.float32), node.input[1]))
            inverse, smoothed = f"{node.name}_smooth_inverse", f"{node.name}_smoothed_input"
            model.graph.initializer.append(numpy_helper.from_array(1.0 / scale, inverse))
            rebuilt.append(helper.make_node("Mul", [node.input[0], inverse], [smoothed],
                                            name=f"{node.name}_smooth"))
            node.input[0] = smoothed
        rebuilt.append(node)
    del model.graph.node[:]
    model.graph.node.extend(rebuilt)
