"""Run a WASI command module (the sample's iris_sample.wasm) with the wasmtime Python package.

    python run.py build/iris_sample.wasm

Its standard output and exit status are the program's (the `wasmtime` command does the same).
"""

import sys

try:
    import wasmtime
except ImportError:
    sys.exit("run.py needs the wasmtime package: pip install wasmtime")


def main(path: str) -> int:
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    store.set_wasi(wasi)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    instance = linker.instantiate(store, wasmtime.Module.from_file(engine, path))
    try:
        instance.exports(store)["_start"](store)
    except wasmtime.ExitTrap as e:
        return e.code
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python run.py PROGRAM.wasm")
    sys.exit(main(sys.argv[1]))
