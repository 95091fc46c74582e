"""dmlvk's lab: the tools of the source tree, apart from the library (which never imports them):
benchmarks (bench, bench_models, bench_runtime, bench_peers), the portability report (report,
portability, conformance), DirectML's documented examples (examples, demo), oracles (oracles,
onnx_models) and the fuzzer (fuzz). Run them as python -m dmlvk_lab {report,bench,demo,fuzz} (or
dmlvk report, ... from a checkout)."""
