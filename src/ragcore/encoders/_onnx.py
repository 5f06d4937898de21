"""An onnxruntime session for a text encoder: provider choice, input checks, runs."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import numpy as np

from ._denormals import flushed_denormals, keep_denormals, thread_state_kept

TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
PROVIDER_CHOICES = ("auto", "cpu", "cuda")
_CUDA = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
# onnxruntime's optimizer fuses Add, Add, LayerNormalization into
# SkipLayerNormalization, whose CPU kernel (1.32) is a scalar loop with one
# division per element; the vectorised LayerNormalization it replaces runs the
# whole model faster on CPU (1.09x fp32, 1.17x int8: build/bert_graph.py).
# CUDA's SkipLayerNormalization is fast, so the fusion stays on there.
CPU_ONLY_DISABLED_FUSIONS = ("SkipLayerNormFusion",)


def _requested_providers(providers, available) -> list[str]:
    if isinstance(providers, (list, tuple)):
        return list(providers)
    if providers == "cpu":
        return [CPU_PROVIDER]
    if providers == "cuda":
        if _CUDA not in available:
            raise RuntimeError(
                "providers='cuda': onnxruntime has no CUDA provider here (install onnxruntime-gpu "
                f"on a machine with an NVIDIA GPU); available: {', '.join(available)}")
        return [_CUDA, CPU_PROVIDER]
    if providers == "auto":
        return [_CUDA, CPU_PROVIDER] if _CUDA in available else [CPU_PROVIDER]
    raise ValueError(f"unknown providers {providers!r}; expected one of "
                     f"{', '.join(map(repr, PROVIDER_CHOICES))} or a list of provider names")


def session_options(threads: int, denormals_as_zero: bool = False):
    """onnxruntime options of every ragcore session: `threads` intra-op threads
    (0: onnxruntime's choice, every physical core), one inter-op thread, no spinning;
    denormals_as_zero: the session's pool threads flush subnormals (the calling
    thread's state is the caller's: see _denormals)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    # Pool threads that spin between operators take the cores other work
    # needs: on a loaded machine, 2 spinning threads ran slower than 1 thread,
    # and 2 non-spinning ones near it.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if denormals_as_zero:
        options.add_session_config_entry("session.set_denormal_as_zero", "1")
    options.log_severity_level = 3
    return options


def disabled_fusions(requested: list[str]) -> list[str]:
    """onnxruntime graph fusions to leave out for these providers (CPU only: see
    CPU_ONLY_DISABLED_FUSIONS)."""
    return list(CPU_ONLY_DISABLED_FUSIONS) if requested == [CPU_PROVIDER] else []


def flushes_denormals(requested: list[str]) -> bool:
    """Whether sessions for these providers flush subnormals: CPU-only sessions,
    unless RAGCORE_KEEP_DENORMALS is set. CUDA sessions run their math on the GPU and
    keep onnxruntime's defaults (a gain there was not measured)."""
    return requested == [CPU_PROVIDER] and not keep_denormals()


class OnnxModel:
    """One ONNX model taking input_ids / attention_mask (/ token_type_ids).

    providers="auto" asks for CUDA when onnxruntime offers it and then checks
    what the session really uses (onnxruntime falls back to CPU silently);
    ``provider`` says which one runs. threads=0 lets onnxruntime use every
    physical core for one call; calls are never run in parallel on top of it,
    and its threads sleep rather than spin between operators.

    On CPU each run flushes subnormal floats to zero on the calling thread and
    the session's pool threads (``flush_denormals``; RAGCORE_KEEP_DENORMALS=1
    turns it off): the masked softmax of attention otherwise runs on subnormals
    at a fraction of its speed (_denormals.py).

    io_binding: None (default) binds inputs and outputs through onnxruntime's
    IOBinding on CUDA and uses plain ``run`` on CPU; True or False forces
    either path on any provider (on CPU, binding exists so tests can run the
    code that CUDA uses; it gives the same numbers as ``run``).
    """

    def __init__(self, path, providers="auto", threads: int = 0, io_binding: bool | None = None):
        import onnxruntime as ort

        if io_binding is not None and not isinstance(io_binding, bool):
            raise TypeError(f"io_binding must be True, False or None (automatic), "
                            f"got {type(io_binding).__name__}")

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"model_path: {path} does not exist (expected an .onnx file)")
        requested = _requested_providers(providers, ort.get_available_providers())
        flush = flushes_denormals(requested)
        try:
            with thread_state_kept():
                self.session = ort.InferenceSession(str(path), session_options(threads, flush),
                                                    providers=requested,
                                                    disabled_optimizers=disabled_fusions(requested))
        except Exception as err:  # onnxruntime raises its own exception types
            raise ValueError(f"model_path: {path} could not be loaded as an ONNX model ({err})") from None
        self.path = path
        self.provider = self.session.get_providers()[0]
        if providers == "cuda" and self.provider != _CUDA:
            raise RuntimeError("providers='cuda': onnxruntime created the session on "
                               f"{self.provider}; the CUDA provider did not load")
        self.input_names = [i.name for i in self.session.get_inputs()]
        unknown = [n for n in self.input_names if n not in TEXT_INPUTS]
        if unknown or "input_ids" not in self.input_names:
            raise ValueError(
                f"model_path: {path} takes inputs {self.input_names}; a text encoder must take "
                f"input_ids and may take attention_mask and token_type_ids")
        output = self.session.get_outputs()[0]
        self.output_name = output.name
        self.output_rank = len(output.shape)
        self.io_binding = self.provider == _CUDA if io_binding is None else io_binding
        self.flush_denormals = flush and self.provider == CPU_PROVIDER
        self._output_device = _output_device(self.session, self.provider)

    def run(self, batch) -> np.ndarray:
        feeds = {name: np.ascontiguousarray(getattr(batch, name)) for name in self.input_names}
        with flushed_denormals() if self.flush_denormals else nullcontext():
            if self.io_binding:
                return self._run_bound(feeds)
            return self.session.run([self.output_name], feeds)[0]

    def _run_bound(self, feeds) -> np.ndarray:
        """Inputs bound from host memory (onnxruntime copies them to the device
        inside the run), the output allocated by onnxruntime on the provider's own
        device and copied to the host once. IOBinding keeps the input arrays alive
        until it is dropped."""
        binding = self.session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output(self.output_name, *self._output_device)
        self.session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0]


def _output_device(session, provider: str) -> tuple[str, int]:
    """(device type, device id) for the bound output: the CUDA device the session
    really runs on (a provider option; binding to cuda:0 while the session runs
    on another GPU would make onnxruntime copy across devices), else the host."""
    if provider != _CUDA:
        return "cpu", 0
    options = session.get_provider_options().get(_CUDA, {})
    return "cuda", int(options.get("device_id", 0))


def load_graph(path):
    """The model's onnx graph without external weights (None without the onnx package)."""
    try:
        import onnx
    except ImportError:
        return None
    return onnx.load(str(path), load_external_data=False).graph


def embedding_rows(graph) -> int | None:
    """Rows of the model's token-embedding table, when the graph shows them."""
    if graph is None:
        return None
    shapes = {init.name: list(init.dims) for init in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    for node in graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[1] == "input_ids":
            table = node.input[0]
            if table in shapes:
                return shapes[table][0]
            source = producers.get(table)  # e.g. DequantizeLinear of an int8 table
            if source is not None and source.input and source.input[0] in shapes:
                return shapes[source.input[0]][0]
    return None


def graph_operators(graph) -> frozenset:
    """The operator types of the graph (empty when it is not known)."""
    return frozenset() if graph is None else frozenset(node.op_type for node in graph.node)
