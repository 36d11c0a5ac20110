/* The sample's stdio on wasm32 without a C library: printf, written by stdio.c to WASI's
 * fd_write (any WASI runtime: wasmtime, or run.py beside this file). */
#ifndef SAMPLE_WASM_STDIO_H
#define SAMPLE_WASM_STDIO_H

int printf(const char *format, ...);

#endif /* SAMPLE_WASM_STDIO_H */
