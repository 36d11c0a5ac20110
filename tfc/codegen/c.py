"""The C target's view of kernel specs: loop nests, function names and literals for its templates.

`kernel_template(kernel)` names the template of templates/c/kernels that renders a kernel
and the data it interpolates, derived here from the kernel's typed spec (ops/kernels.py):
loop nests walking memory order, the runtime functions a kernel calls (tfc_gemm_f32,
tfc_conv_forward_direct_f32...), C literals, and the algorithm a C kernel runs where the
C target has several (the tiled 2x2 pools). The CUDA target reuses the C spellings it shares
(tfc/codegen/cuda.py); nothing here is parsed back by anyone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tfc.codegen import fusion
from tfc.codegen.loops import index_expr, loop_lines, loop_statements
from tfc.ir import dtypes as _dt
from tfc.ir.tensor_shape import num_elements
from tfc.ops.conv_algo import operand_sizes
from tfc.ops.kernels import (
    BFLOAT16_PRODUCTS,
    ArgReduceSpec,
    BandSpec,
    ConvSpec,
    CumulativeSpec,
    GemmSpec,
    Geometry,
    IndexSpec,
    Kernel,
    MatrixSpec,
    NdIndexSpec,
    OrderSpec,
    RangeSpec,
    ReduceSpec,
    RowSpec,
    RowsSpec,
    ScanSpec,
    SegmentSpec,
    SequenceSpec,
    TextSpec,
    WindowSpec,
    c_literal,
    c_string,
    type_tag,
    unsigned_ctype,
)

KernelTemplate = tuple[str, dict]  # a template stem under <target>/kernels and its data


def kernel_template(kernel: Kernel) -> KernelTemplate:
    """The C template of `kernel` and its data."""
    render = _KINDS.get(kernel.template)
    if render is None and isinstance(kernel.spec, WindowSpec):
        render = window_kernel  # a window op of its own kind: its template reads the geometry
    if render is None:
        raise NotImplementedError(f"the C target cannot render kernels of kind {kernel.template}")
    return render(kernel)


# -- loop nests (loop, reduce, matmul, fused): the body is written here, line by line ----------
def loop_kernel(kernel: Kernel) -> KernelTemplate:
    spec = kernel.spec
    names = [f"i{k}" for k in range(len(spec.bounds))]
    opens, indent, closes = loop_lines(spec.bounds, names)
    statements, guard = loop_statements(kernel, names)
    body = list(opens)
    if guard is not None:
        error = f"tfc_error_set(err, TFC_ERR_INVALID_ARGUMENT, {c_string(spec.message)})"
        body.append(f"{indent}if ({guard}) return {error};")
    body += [indent + s for s in statements]
    body += closes
    if kernel.can_fail:
        body.append("    return TFC_OK;")
    return "body", {"body": body}


def _accumulator(acc: _dt.DType, ctype: str) -> str:
    """The C type of an accumulator of `acc` for values of `ctype`: a float sum's double is
    tfc_sum_f32 (tfc_math.h: float where the target has no double-precision hardware)."""
    return "tfc_sum_f32" if acc is _dt.float64 and ctype == "float" else acc.c_type


def reduce_kernel(kernel: Kernel) -> KernelTemplate:
    """Memory order: a loop over the kept dims and the reduced ones between them, then (with
    an accumulator of spec.acc) the trailing run of reduced dims."""
    spec: ReduceSpec = kernel.spec
    dims = spec.dims
    suffix = 0
    while suffix < len(dims) and dims[len(dims) - 1 - suffix].reduced:
        suffix += 1
    outer, inner = dims[: len(dims) - suffix], dims[len(dims) - suffix :]
    ov = [f"i{k}" for k in range(len(outer))]
    iv = [f"j{k}" for k in range(len(inner))]
    out_idx = index_expr([d.y_stride for d in outer], ov)
    x_idx = index_expr([d.x_stride for d in outer] + [d.x_stride for d in inner], ov + iv)
    opens, indent, closes = loop_lines([d.size for d in outer], ov)
    body = [f"    for (int64_t o = 0; o < {spec.out_count}; ++o) y[o] = {spec.init};"]
    if spec.in_count == 0:
        body.append("    (void)x0; /* nothing to read: the reduction is over an empty dimension */")
    elif inner:
        inner_opens, inner_indent, inner_closes = loop_lines(
            [d.size for d in inner], iv, base_indent=len(outer) + 1
        )
        update = "acc = " + spec.combine.format(a="acc", b=f"x0[{x_idx}]") + ";"
        body += opens
        body.append(f"{indent}{_accumulator(spec.acc, kernel.params[0].ctype)} acc = y[{out_idx}];")
        body += [*inner_opens, inner_indent + update, *inner_closes]
        body.append(f"{indent}y[{out_idx}] = acc;")
        body += closes
    else:
        y = f"y[{out_idx}]"
        body += [*opens, indent + f"{y} = " + spec.combine.format(a=y, b=f"x0[{x_idx}]") + ";"]
        body += closes
    if spec.finalize is not None:
        finalize = spec.finalize.format(a="y[o]")
        body.append(f"    for (int64_t o = 0; o < {spec.out_count}; ++o) y[o] = {finalize};")
    return "body", {"body": body}


def gemm_lines(spec: GemmSpec, function: str) -> list[str]:
    """The call of the runtime GEMM `function` for every point of the batch dims (a loop over
    them on the host): the C and the CUDA matmul kernels alike."""
    names = [f"b{k}" for k in range(len(spec.batch))]
    opens, indent, closes = loop_lines(spec.batch, names)
    c_st, a_st, b_st = spec.batch_strides
    args = [
        spec.m, spec.n, spec.k, f"x0 + {index_expr(a_st, names)}", spec.sam, spec.sak,
        f"x1 + {index_expr(b_st, names)}", spec.sbk, spec.sbn, f"y + {index_expr(c_st, names)}",
    ]  # fmt: skip
    return [*opens, f"{indent}{function}({', '.join(str(a) for a in args)});", *closes]


def gemm_function(spec: GemmSpec, prefix: str) -> str:
    """The runtime GEMM of `spec` named `prefix` + its tag: tfc_gemm_f32, or under mixed
    precision tfc_gemm_bf16_f32 (tfc_gemm_bf16.h: operands rounded to bfloat16, fp32 sums)."""
    tag = type_tag(spec.dtype)
    return f"{prefix}_bf16_{tag}" if spec.precision == BFLOAT16_PRODUCTS else f"{prefix}_{tag}"


def matmul_kernel(kernel: Kernel) -> KernelTemplate:
    spec: GemmSpec = kernel.spec
    if spec.packed_b:  # one product (no batch dims), its B kept packed between calls
        args = [
            spec.m, spec.n, spec.k, "x0", spec.sam, spec.sak, "x1", spec.sbk, spec.sbn, "pk",
            "tfc_gemm_packed_epoch(ep)", "y", spec.n, c_literal(1, spec.dtype),
            c_literal(0, spec.dtype), "NULL", 0,
        ]  # fmt: skip
        call = f"{gemm_function(spec, 'tfc_gemm')}_ex_packed({', '.join(map(str, args))});"
        return "body", {"body": [f"    {call}"]}
    return "body", {"body": gemm_lines(spec, gemm_function(spec, "tfc_gemm"))}


def fused_kernel(kernel: Kernel) -> KernelTemplate:
    row_parts = fusion.c_fused_row_parts(kernel)
    if row_parts is not None:
        return "fused_row_parts", row_parts
    cols = fusion.c_fused_cols(kernel)
    if cols is not None:
        return "fused_cols", cols
    rows = fusion.c_fused_rows(kernel)
    if rows is not None:
        return "fused_rows", rows
    return "body", {"body": fusion.c_fused_body(kernel)}


# -- row kernels ----------------------------------------------------------------------------------
def rows_data(spec: RowSpec) -> dict:
    """The sizes of a row kernel as int64 literals, its element type, and its expressions."""
    return {
        "ctype": spec.dtype.c_type,
        "sum_ctype": _accumulator(_dt.float64, spec.dtype.c_type),
        "rows": c_literal(spec.rows, _dt.int64),
        "cols": c_literal(spec.cols, _dt.int64),
        **spec.exprs,
    }


def softmax_kernel(kernel: Kernel) -> KernelTemplate:
    return "softmax", rows_data(kernel.spec)


def rows_values_kernel(kernel: Kernel) -> KernelTemplate:
    """A row kernel whose template reads the sizes and the spec's values as they are (the
    int8 softmax and mean: integer literals)."""
    return kernel.template, rows_data(kernel.spec)


def softmax_grad_kernel(kernel: Kernel) -> KernelTemplate:
    return "softmax_grad", rows_data(kernel.spec)


def sparse_xent_kernel(kernel: Kernel) -> KernelTemplate:
    data = rows_data(kernel.spec)
    data["more"] = c_string(data["more"])
    return "sparse_xent", data


def top_k_kernel(kernel: Kernel) -> KernelTemplate:
    return "top_k", rows_data(kernel.spec)


def in_top_k_kernel(kernel: Kernel) -> KernelTemplate:
    return "in_top_k", rows_data(kernel.spec)


# -- convolutions and pools ---------------------------------------------------------------------
# the fields of tfc_conv_plan (runtime/include/tfc_conv.h), in order
PLAN_FIELDS = (
    "batch", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "k_h", "k_w", "s_h", "s_w",
    "d_h", "d_w", "pad_top", "pad_left", "pix_block", "pix_wide", "co_block", "hp", "wp", "cp",
    "chunk", "blocked", "packed", "prefetch_rows", "bias", "residual", "act", "ldy", "y_off",
)  # fmt: skip
# the tfc_conv.h function of each op kind; all take (plan, in, in, out, scratch..., part), the
# forward ones (plan, in, in, bias, residual, out, scratch..., part)
CONV_FUNCTIONS = {"forward": "tfc_conv_forward", "input": "tfc_conv_backprop_input",
                  "filter": "tfc_conv_backprop_filter"}  # fmt: skip


def conv_kernel(kernel: Kernel) -> KernelTemplate:
    """A call of the tfc_conv.h function of the plan's variant, with the plan as a static
    tfc_conv_plan and the scratch regions it uses."""
    spec: ConvSpec = kernel.spec
    stem = f"{CONV_FUNCTIONS[spec.kind]}_{spec.plan.kernel}"
    tag = type_tag(spec.dtype)
    scratch = [f"s + {offset}" if offset is not None else "NULL" for offset in spec.plan.regions]
    fields = spec.plan.fields
    operands, rounding = ["x0", "x1"], []
    if spec.plan.rounded is not None:  # mixed precision: the kernel multiplies rounded copies
        operands = [f"s + {offset}" for offset in spec.plan.rounded]
        sizes = operand_sizes(spec.kind, spec.geometry)
        rounding = [
            f"tfc_round_bf16_f32(x{i}, {copy}, {size});"
            for i, (copy, size) in enumerate(zip(operands, sizes))
        ]
    if spec.kind == "forward":  # the epilogue's operands (_FusedConv2D), where the plan has them
        operands += ["x2" if fields["bias"] else "NULL", "x3" if fields["residual"] else "NULL"]
    return "conv2d", {
        "plan": ", ".join(str(fields[k]) for k in PLAN_FIELDS),
        "function": f"{stem}_{tag}",
        "part_function": f"{stem}_part_{tag}",
        "args": ", ".join([*operands, "y", *scratch]),
        "rounding": rounding,
    }


def geometry_data(g: Geometry, dtype: _dt.DType) -> dict:
    """Every size of a window op as a literal, its element type and runtime suffix."""
    data: dict = dict(g.__dict__)
    data.update(ctype=dtype.c_type, tag=type_tag(dtype))
    data["in_size"] = g.batch * g.in_h * g.in_w * g.in_c
    data["image_size"] = g.in_h * g.in_w * g.in_c
    data["filter_size"] = g.k_h * g.k_w * g.in_c * g.out_c
    return data


def window_data(spec: WindowSpec) -> dict:
    """A window kernel's sizes: the geometry's and the spec's own."""
    return geometry_data(spec.geometry, spec.dtype) | spec.sizes


def window_kernel(kernel: Kernel) -> KernelTemplate:
    return kernel.template, window_data(kernel.spec)


# the tiled pool kernels keep a few rows on the stack: at most this many values per row
TILED_ROW_LIMIT = 512
# the tiled pool kernels split their row pairs into this many parts over the thread pool, when
# the input has at least TILED_PARALLEL_MIN values: measured at 2 threads on LeNet's conv1
# MaxPool + MaxPoolGrad split with no threshold, idle: 4.7k values 0.60x, 9.4k 0.92x, 18.8k
# 1.20x, 37.6k 1.47x; with another process busy on the other core, 18.8k 0.51x, 37.6k 0.66x
# (small gains, larger losses on a shared machine). Each value is computed alone, so any split
# gives the same bits.
TILED_ROW_PARTS = 16
TILED_PARALLEL_MIN = 1 << 15


def tiles_2x2(g: Geometry) -> bool:
    """Whether 2x2 windows at stride 2 cover the input exactly, each pixel once (LeNet's pools):
    then the tiled max pool kernels work on whole rows, branch-free."""
    return (
        (g.k_h, g.k_w, g.s_h, g.s_w, g.pad_top, g.pad_left) == (2, 2, 2, 2, 0, 0)
        and (g.in_h, g.in_w) == (2 * g.out_h, 2 * g.out_w)
        and g.in_w * g.in_c <= TILED_ROW_LIMIT
    )


def tiled_row_parts(g: Geometry) -> dict[str, int]:
    """The template data splitting a tiled pool kernel's row pairs into parts."""
    rows = g.batch * g.out_h
    parts = TILED_ROW_PARTS if g.batch * g.in_h * g.in_w * g.in_c >= TILED_PARALLEL_MIN else 1
    per_part = max(1, -(-rows // parts))
    return {"rows": rows, "rows_per_part": per_part, "row_parts": -(-rows // per_part)}


def max_pool_kernel(kernel: Kernel) -> KernelTemplate:
    """The tiled kernel where 2x2 windows tile the input, else the window loop. Its maximum
    step is two selects (vector compares and blends, no branch): tfc_max's short-circuit form
    looked faster for LeNet's 6 channels on zero inputs (0.03 ms) but branches on the data: on
    the benchmark's images conv1's pool took 0.53 ms with it, against about 0.1 ms as selects."""
    spec: WindowSpec = kernel.spec
    g, ct = spec.geometry, spec.dtype.c_type
    data = window_data(spec)
    if tiles_2x2(g):
        return "max_pool_tiled", data | tiled_row_parts(g)
    data["max_step"] = f"const {ct} larger = v > m ? v : m; yp[c] = v != v ? v : larger;"
    return "max_pool", data


def max_pool_grad_kernel(kernel: Kernel) -> KernelTemplate:
    """MaxPoolGrad: the tiled kernel where 2x2 windows tile the input, else the argmax search
    per window (also MaxPoolGradGrad's), over blocks of up to 64 channels (their maxima and
    positions stay in L1; a compare and two blends per vector of channels), positions within
    one image in int32 (it vectorizes beside the floats) unless an image is huge."""
    spec: WindowSpec = kernel.spec
    g = spec.geometry
    data = window_data(spec)
    if kernel.template == "max_pool_grad" and tiles_2x2(g):
        return "max_pool_grad_tiled", data | tiled_row_parts(g)
    data.update(
        block=max(1, min(g.in_c, 64)),
        index_type="int32_t" if data["image_size"] < 2**31 else "int64_t",
    )
    return kernel.template, data


# -- indexing, scans, argmax --------------------------------------------------------------------
def index_kernel(kernel: Kernel) -> KernelTemplate:
    """gather, segment_sum: the ids checked, then the rows copied (added); only the check
    where the output is empty (no pointer is offset from a NULL buffer)."""
    spec: IndexSpec = kernel.spec
    data = dict(spec.__dict__, ctype=spec.dtype.c_type, index_ctype=spec.index_dtype.c_type)
    return kernel.template if spec.copy else kernel.template + "_check", data


def rows_kernel(kernel: Kernel) -> KernelTemplate:
    """The TensorArray kernels: rows of a buffer by run-time index (ops/tensor_array.py)."""
    spec: RowsSpec = kernel.spec
    values = dict(spec.values)
    data = dict(
        ctype=spec.dtype.c_type,
        index_ctype=spec.index_dtype.c_type,
        rows=c_literal(spec.rows, _dt.int64),
        width=c_literal(spec.width, _dt.int64),
        count=c_literal(spec.count, _dt.int64),
        total=c_literal(spec.rows * spec.width, _dt.int64),
    )
    if kernel.template == "ta_read":
        clear = values.pop("clear")
        data["clear"] = (
            [
                "if (flags[k] == 2)",
                "    return tfc_error_i64(err, TFC_ERR_INVALID_ARGUMENT, "
                f"{values['read_cleared_a']}, k, {values['read_cleared_b']}, {data['rows']}, "
                f"{values['read_cleared_c']});",
                "flags[k] = 2;",
            ]
            if clear
            else []
        )
    if kernel.template == "ta_put_rows":
        mode = values.pop("mode")
        data["update"] = {
            "set": "dst[j] = v[i * {w} + j]",
            "add": "dst[j] += v[i * {w} + j]",
            "zero": "dst[j] = 0",
        }[mode].format(w=data["width"])
    return kernel.template, data | values


def one_hot_kernel(kernel: Kernel) -> KernelTemplate:
    spec: IndexSpec = kernel.spec
    return "one_hot", {
        "ctype": spec.dtype.c_type,
        "index_ctype": spec.index_dtype.c_type,
        "outer": spec.outer,
        "depth": spec.limit,
        "inner": spec.inner,
    }


def c_list(values: tuple[int, ...]) -> str:
    """The body of a C array initializer; "0" for none (C has no empty arrays)."""
    return ", ".join(str(v) for v in values) or "0"


def nd_index_kernel(kernel: Kernel) -> KernelTemplate:
    """gather_nd, scatter_nd: each index tuple checked against the indexed dims (the message
    TensorFlow gives: the tuple and the shape, or for the 1-D scatters index and limit), and
    the slices of `inner` values copied, or combined by the spec's update expression."""
    spec: NdIndexSpec = kernel.spec
    depth = len(spec.dims)
    strides = tuple(math.prod(spec.dims[k + 1 :]) * spec.inner for k in range(depth))
    if spec.flat_index:
        fail = [f'return tfc_error_index(err, "indices", tuple, v, {spec.dims[0]});']
    else:
        fail = [
            f"int64_t values[{max(depth, 1)}];",
            f"for (int64_t c = 0; c < {depth}; ++c) values[c] = (int64_t)idx[tuple * {depth} + c];",
            f"const int64_t lead[{max(len(spec.lead), 1)}] = {{ {c_list(spec.lead)} }};",
            f"const int64_t shape[{max(len(spec.shape), 1)}] = {{ {c_list(spec.shape)} }};",
            f"return tfc_error_nd_index(err, tuple, lead, {len(spec.lead)}, values, {depth}, "
            f"shape, {len(spec.shape)}, {c_string(spec.shape_what)});",
        ]
    data = {
        "ctype": spec.dtype.c_type,
        "batch": spec.batch,
        "batch_stride": spec.batch_stride,
        "count": spec.count,
        "tuples": spec.batch * spec.count,
        "depth": depth,
        "inner": spec.inner,
        "dims_len": max(depth, 1),
        "dims": c_list(spec.dims),
        "strides": c_list(strides),
        "fail": fail,
    }
    if kernel.template == "gather_nd":
        return "gather_nd", data
    update_at = "0" if spec.scalar_updates else f"tuple * {spec.inner} + j"
    update = spec.update.format(a="y[at + j]", b=f"u[{update_at}]")
    init = {
        None: [],
        "zeros": [f"for (int64_t o = 0; o < {spec.total}; ++o) y[o] = 0;"],
        "input": [f"for (int64_t o = 0; o < {spec.total}; ++o) y[o] = x[o];"],
    }[spec.init]
    guard = []
    if spec.update_guard is not None:
        condition, message = spec.update_guard
        error = f"tfc_error_set(err, TFC_ERR_INVALID_ARGUMENT, {c_string(message)})"
        n = 1 if spec.scalar_updates else spec.batch * spec.count * spec.inner
        guard = [
            f"for (int64_t o = 0; o < {n}; ++o) {{",
            f"    if ({condition.format(b='u[o]')}) return {error};",
            "}",
        ]
    return "scatter_nd", data | {"init": init, "guard": guard, "update": f"y[at + j] = {update};"}


def order_kernel(kernel: Kernel) -> KernelTemplate:
    """sort, search_sorted, invert_permutation: rows of values, and how two compare."""
    spec: OrderSpec = kernel.spec
    return kernel.template, {
        "ctype": spec.dtype.c_type,
        "index_ctype": spec.index_dtype.c_type,
        "rows": spec.rows,
        "n": spec.n,
        "m": spec.m,
        "before": spec.before.format(u="u", v="v"),
    }


def reverse_sequence_kernel(kernel: Kernel) -> KernelTemplate:
    spec: SequenceSpec = kernel.spec
    return "reverse_sequence", dict(spec.__dict__)


def check_numerics_kernel(kernel: Kernel) -> KernelTemplate:
    spec: ScanSpec = kernel.spec
    messages = {k: c_string(v) for k, v in spec.values.items()}
    return "check_numerics", {"count": spec.count, **messages}


def count_up_to_kernel(kernel: Kernel) -> KernelTemplate:
    spec: ScanSpec = kernel.spec
    message = c_string(spec.values["message"])
    return "count_up_to", {"limit": spec.values["limit"], "message": message}


def check_predicate_kernel(kernel: Kernel) -> KernelTemplate:
    return "check_predicate", {"message": c_string(kernel.spec.values["message"])}


def random_kernel(kernel: Kernel) -> KernelTemplate:
    spec: ScanSpec = kernel.spec
    function = f"tfc_random_{spec.values['distribution']}_{type_tag(spec.dtype)}"
    return "random", {"function": function, "count": c_literal(spec.count, _dt.int64)}


def random_int_kernel(kernel: Kernel) -> KernelTemplate:
    spec: ScanSpec = kernel.spec
    return "random_int", {
        "ctype": spec.dtype.c_type,
        "utype": unsigned_ctype(spec.dtype),
        "count": c_literal(spec.count, _dt.int64),
        **spec.values,
    }


def sampling_kernel(kernel: Kernel) -> KernelTemplate:
    """random_shuffle, multinomial, random_gamma, random_poisson: the sizes and expressions the
    spec carries, as literals."""
    spec: ScanSpec = kernel.spec
    data = {"ctype": spec.dtype.c_type, "count": c_literal(spec.count, _dt.int64)}
    return kernel.template, data | spec.values


_TEXT_ELEMENT = {"float32": "tfc_text_f32", "float64": "tfc_text_f64", "int32": "tfc_text_i32",
                 "int64": "tfc_text_i64", "bool": "tfc_text_bool"}  # fmt: skip
_TEXT_ELEMENT |= {d.name: f"tfc_text_{type_tag(d)}" for d in (*_dt.INTEGERS, *_dt.FLOATS)}


def _text_lines(spec: TextSpec) -> list[str]:
    """Statements writing `spec`'s parts to a tfc_text `t` (runtime tfc_text.h)."""
    lines = []
    summarize = f"tfc_text_{spec.style}"
    pending = ""  # literal text, written in one call up to the next tensor
    for part in spec.parts:
        if not part.param:
            pending += part.text
            continue
        if pending:
            lines.append(f"    tfc_text_puts(&t, {c_string(pending)});")
            pending = ""
        assert part.dtype is not None
        rank, count = len(part.shape), num_elements(part.shape)
        shape = "NULL"
        if rank:
            dims = ", ".join(str(d) for d in part.shape)
            lines.append(f"    {{ static const int64_t shape[{rank}] = {{{dims}}};")
            shape = "shape"
        call = (
            f"{summarize}(&t, {part.param}, {_TEXT_ELEMENT[part.dtype.name]}, {shape}, {rank}, "
            f"{count}, {spec.summarize});"
        )
        lines.append(f"    {call}" + (" }" if rank else ""))
    if pending:
        lines.append(f"    tfc_text_puts(&t, {c_string(pending)});")
    return lines


def print_kernel(kernel: Kernel) -> KernelTemplate:
    """tf.Print and tf.print: the text written to a stream, the first `first_n` runs only."""
    spec: TextSpec = kernel.spec
    body = []
    if spec.first_n >= 0:  # TF counts per kernel instance: here, per loaded program
        body += [
            "    static int64_t runs = 0;",
            f"    if (runs >= {spec.first_n}) return;",
            "    ++runs;",
        ]
    body += ["    char buf[1024];", f"    tfc_text t = {{buf, sizeof buf, 0, {spec.stream}}};"]
    body += _text_lines(spec)
    body.append("    tfc_text_flush(&t);")
    return "body", {"body": body}


def assert_kernel(kernel: Kernel) -> KernelTemplate:
    """tf.Assert: nothing while the condition holds; else the run fails with the text."""
    spec: TextSpec = kernel.spec
    body = [
        "    if (cond[0]) return TFC_OK;",
        "    if (err == NULL || err->msg == NULL) return TFC_ERR_INVALID_ARGUMENT;",
        "    tfc_text t = {err->msg, err->cap, 0, 0};",
        *_text_lines(spec),
        "    return TFC_ERR_INVALID_ARGUMENT;",
    ]
    return "body", {"body": body}


def _strided(terms: list[tuple[str, int]]) -> str:
    """A C index expression sum(var * stride), leaving out what multiplies by 0 or 1."""
    parts = [v if s == 1 else f"{v} * {s}" for v, s in terms if s != 0]
    return " + ".join(parts) if parts else "0"


def argreduce_kernel(kernel: Kernel) -> KernelTemplate:
    """The input as [outer, n, inner]: rows of `inner` elements are read in memory order, each
    compared with the best element found so far in its column (found through the output)."""
    spec: ArgReduceSpec = kernel.spec
    outer, n, inner = spec.outer, spec.n, spec.inner
    out_idx = _strided([("o", inner if outer > 1 else 0), ("i", 1 if inner > 1 else 0)])
    column = [("o", n * inner if outer > 1 else 0), ("i", 1 if inner > 1 else 0)]
    return "argreduce", {
        "outer": outer,
        "n": n,
        "inner": inner,
        "ctype": spec.dtype.c_type,
        "out_idx": out_idx,
        "best_idx": _strided([*column, (f"(int64_t)y[{out_idx}]", inner)]),
        "v_idx": _strided([*column, ("k", inner)]),
        "better": spec.better,
        "index_ctype": spec.index_dtype.c_type,
    }


def cumulative_data(spec: CumulativeSpec) -> dict:
    """A running fold along [outer, n, inner]: step k of a line (k = 1..n-1) writes position
    pos(k) from pos(k - 1) and the element at pos(k) (pos(k - 1) when exclusive); pos(k) is k,
    or n - 1 - k in reverse. The offsets are C expressions of k, scaled by `inner`."""
    n, inner = spec.n, spec.inner
    if spec.reverse:
        first, here, prev = n - 1, f"({n - 1} - k) * {inner}", f"({n} - k) * {inner}"
    else:
        first, here, prev = 0, f"k * {inner}", f"(k - 1) * {inner}"
    first_at = first * inner
    return {
        "ctype": spec.dtype.c_type,
        "outer": spec.outer,
        "n": n,
        "inner": inner,
        "line": n * inner,
        "first_at": first_at,
        "first": spec.init if spec.exclusive else f"xo[{first_at} + i]",
        "x_at": prev if spec.exclusive else here,
        "y_at": here,
        "prev_at": prev,
        "combine": spec.combine.format(a="yp[i]", b="xk[i]"),
    }


def cumulative_kernel(kernel: Kernel) -> KernelTemplate:
    return "cumulative", cumulative_data(kernel.spec)


def range_value(spec: RangeSpec, index: str) -> str:
    """The C expression of element `index` of a Range."""
    return f"{spec.start} + ({spec.dtype.c_type}){index} * {spec.delta}"


def range_kernel(kernel: Kernel) -> KernelTemplate:
    spec: RangeSpec = kernel.spec
    return "range", {"count": spec.count, "value": range_value(spec, "i")}


def segment_kernel(kernel: Kernel) -> KernelTemplate:
    """segment_reduce (ids checked, negative ones dropped), segment_sorted (compile-time ids:
    runs of equal ids, each finished by `finalize`), bincount; the check alone for rows of
    no values (no pointer is offset from a NULL buffer)."""
    spec: SegmentSpec = kernel.spec
    # bincount adds each row's weight w[i] at y[v]; the others fold src[j] into dst[j]
    a, b = ("y[v]", "w[i]") if kernel.template == "bincount" else ("dst[j]", "src[j]")
    data = dict(
        spec.__dict__,
        ctype=spec.dtype.c_type,
        combine=spec.combine.format(a=a, b=b),
        finalize=[]
        if spec.finalize is None
        else [
            f"for (int64_t j = 0; j < {spec.inner}; ++j) dst[j] = "
            + spec.finalize.format(a="dst[j]", n="n")
            + ";"
        ],
    )
    if kernel.template == "segment_reduce" and spec.inner == 0:
        return "segment_reduce_check", data
    return kernel.template, data


# -- linear algebra ------------------------------------------------------------------------------
def linalg_call(kernel: Kernel, names: list[str]) -> str:
    """The call of the tfc_linalg.h routine for the matrix at batch point `names`: its sizes,
    then each param offset to that matrix (the CUDA target's thread makes the same call)."""
    spec: MatrixSpec = kernel.spec
    args = [str(size) for size in spec.sizes]
    for p, strides in zip(kernel.params, spec.strides):
        offset = index_expr(strides, names)
        args.append(p.name if offset == "0" else f"{p.name} + {offset}")
    return f"tfc_linalg_{spec.routine}_{type_tag(spec.dtype)}({', '.join(args)})"


def linalg_kernel(kernel: Kernel) -> KernelTemplate:
    """A loop over the batch calling the routine once per matrix; the first that fails stops
    the run with the spec's message."""
    spec: MatrixSpec = kernel.spec
    names = [f"b{k}" for k in range(len(spec.batch))]
    opens, indent, closes = loop_lines(spec.batch, names)
    call = linalg_call(kernel, names)
    if spec.message is None:
        lines = [f"{indent}{call};"]
    else:
        error = f"tfc_error_set(err, TFC_ERR_INVALID_ARGUMENT, {c_string(spec.message)})"
        lines = [f"{indent}if ({call} != 0) return {error};"]
    body = [*opens, *lines, *closes]
    if kernel.can_fail:
        body.append("    return TFC_OK;")
    return "body", {"body": body}


def band_bounds(spec: BandSpec) -> tuple[str, str]:
    """The C expressions of row i's band, columns [lo, hi)."""
    lo = "0" if spec.lower < 0 else f"i - {spec.lower}"
    hi = str(spec.cols) if spec.upper < 0 else f"i + {spec.upper + 1}"
    return lo, hi


def band_part_kernel(kernel: Kernel) -> KernelTemplate:
    """Row by row: the band's columns copied, the others zeroed (a select the compiler turns
    into vector blends)."""
    spec: BandSpec = kernel.spec
    lo, hi = band_bounds(spec)
    cols, ct = spec.cols, spec.dtype.c_type
    row = f"i = r % {spec.rows}, " if spec.lower >= 0 or spec.upper >= 0 else ""
    return "body", {
        "body": [
            f"    for (int64_t r = 0; r < {spec.batch * spec.rows}; ++r) {{",
            f"        const int64_t {row}lo = {lo}, hi = {hi};",
            f"        for (int64_t j = 0; j < {cols}; ++j)",
            f"            y[r * {cols} + j] = j >= lo && j < hi ? x0[r * {cols} + j] : ({ct})0;",
            "    }",
        ]
    }


_KINDS: dict[str, Callable[[Kernel], KernelTemplate]] = {
    "loop": loop_kernel,
    "reduce": reduce_kernel,
    "matmul": matmul_kernel,
    "fused": fused_kernel,
    "softmax": softmax_kernel,
    "softmax_grad": softmax_grad_kernel,
    "int8_softmax": rows_values_kernel,
    "int8_mean": rows_values_kernel,
    "sparse_xent": sparse_xent_kernel,
    "top_k": top_k_kernel,
    "in_top_k": in_top_k_kernel,
    "conv2d": conv_kernel,
    "max_pool": max_pool_kernel,
    "max_pool_grad": max_pool_grad_kernel,
    "max_pool_grad_grad": max_pool_grad_kernel,
    "gather": index_kernel,
    "segment_sum": index_kernel,
    "one_hot": one_hot_kernel,
    "gather_nd": nd_index_kernel,
    "scatter_nd": nd_index_kernel,
    "sort": order_kernel,
    "search_sorted": order_kernel,
    "invert_permutation": order_kernel,
    "reverse_sequence": reverse_sequence_kernel,
    "check_numerics": check_numerics_kernel,
    "count_up_to": count_up_to_kernel,
    "random": random_kernel,
    "random_int": random_int_kernel,
    "argreduce": argreduce_kernel,
    "random_shuffle": sampling_kernel,
    "multinomial": sampling_kernel,
    "random_gamma": sampling_kernel,
    "random_poisson": sampling_kernel,
    "sparse_apply": sampling_kernel,
    "candidate_sampler": sampling_kernel,
    "cumulative": cumulative_kernel,
    "range": range_kernel,
    "segment_reduce": segment_kernel,
    "segment_sorted": segment_kernel,
    "bincount": segment_kernel,
    "linalg": linalg_kernel,
    "band_part": band_part_kernel,
    "print": print_kernel,
    "assert": assert_kernel,
    "check_predicate": check_predicate_kernel,
    "ta_write": rows_kernel,
    "ta_read": rows_kernel,
    "ta_put_rows": rows_kernel,
    "ta_size": rows_kernel,
    "ta_stack_check": rows_kernel,
}


# -- the program -------------------------------------------------------------------------------
def program_parts(data: dict) -> dict:
    """program.c.j2's optional parts: the profile build's table and timers, and the thread
    control of an exported program (a file-local one, in the embeddable library, has none)."""
    profile = data["profile"]
    return {
        "profile_head": ["c/profile_head.c.j2"] if profile else [],
        "profile_table": ["c/profile.c.j2"] if profile else [],
        "thread_control": ["c/threads.c.j2"] if data["exported"] else [],
        "run_begin": [
            "int64_t tfc_prof_start = tfc_prof_now(), tfc_prof_t = tfc_prof_start;",
            "(void)tfc_prof_t;",
        ]
        if profile
        else [],
        "run_end": ["tfc_prof_total_ns += tfc_prof_now() - tfc_prof_start;", "++tfc_prof_runs;"]
        if profile
        else [],
    }
