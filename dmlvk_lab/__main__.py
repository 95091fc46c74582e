"""python -m dmlvk_lab {report,bench,demo,fuzz} [options] (devices and run: the library's dmlvk command)."""
import importlib
import sys

TOOLS = {"report": "portability report against DirectML on each Vulkan device",
         "bench": "benchmark the operators against copy bandwidth and peers",
         "demo": "run DirectML's documented examples on a device",
         "fuzz": "random hostile descriptions against the reference and DirectML's rules"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("devices", "run"):          # the library's own commands
        from dmlvk.__main__ import main as dmlvk_main
        return dmlvk_main(argv)
    if not argv or argv[0] not in TOOLS:
        print("usage: python -m dmlvk_lab {" + ",".join(TOOLS) + "} [options]\n"
              + "\n".join(f"  {name:7s} {text}" for name, text in TOOLS.items()), file=sys.stderr)
        return 2
    return importlib.import_module(f"dmlvk_lab.{argv[0]}").main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
