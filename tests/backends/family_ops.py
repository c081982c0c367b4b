"""The op group of what the importers' model families add (issue 32): per-element gathers
(DeBERTa, BERT's token types), rotary and relative-position math, Caffe-era ceil_mode pools,
segmentation heads' resizes (each coordinate transform and rounding, bicubic). cpu/test_ops.py builds it
for cpu, cuda/cuda_op_groups.py for the GPUs. And the group of batch norms that fold into no
conv (CONCAT_NORMS: DenseNet's concat -> batch norm -> relu), built optimized by
cpu/test_concat_norm.py and cuda_op_groups.py. And a mixture of experts' matrices (EXPERTS)."""


def n(name, op, inputs, **attrs):
    """A spec node: what every op group of the cpu and GPU tests is written in."""
    return {"name": name, "op": op, "inputs": inputs, **attrs}


IMPORT_FAMILIES = dict(
    inputs={"x": {"shape": ["batch", 5, 8]}, "i": {"shape": ["batch", 5, 8], "dtype": "int64"},
            "img": {"shape": ["batch", 7, 6, 3]}, "w64": {"shape": ["batch", 3, 64]},
            "r64": {"shape": ["batch", 3, 64]}, "w100": {"shape": ["batch", 3, 100]},
            "q": {"shape": ["batch", 5, 4, 64]}, "angles": {"shape": [1, 5, 1, 64]},
            "q6": {"shape": ["batch", 3, 6]}},
    # T5's and LLaMA's norm (fuse_rmsnorm.py): on the GPU a row of 64 takes the warp-per-row
    # kernel, one of 100 (not a multiple of 8) the block-per-row one
    graph=[n("rms", "rms_norm", ["w64"]), n("rms_res", "rms_norm", ["w64", "r64"], eps=1e-5),
           n("rms_plain", "rms_norm", ["w100"], affine=False),
           n("picks", "iota", [], shape=["batch", 5, 3], axis=2, start=-1, step=3,
             dtype="int32"),  # -1, 2, 5 of 8
           n("picked", "gather_elements", ["x", "picks"], axis=2),
           n("img_picks", "iota", [], shape=["batch", 4, 6, 3], axis=3, start=-2, step=3),
           n("picked_mid", "gather_elements", ["img", "img_picks"], axis=1),
           # a sort's permutation written back (the importers' counting sort): 3 steps mod 8
           # along the last axis, and mod 7 along an inner one
           n("steps8", "iota", [], shape=["batch", 5, 8], axis=2, step=3, dtype="int32"),
           n("perm8", "remainder", ["steps8"], scalar=8),
           n("permuted", "permute_elements", ["x", "perm8"], axis=2),
           n("steps7", "iota", [], shape=["batch", 7, 6, 3], axis=1, step=3, dtype="int64"),
           n("perm7", "remainder", ["steps7"], scalar=7),
           n("permuted_mid", "permute_elements", ["img", "perm7"], axis=1),
           # running sums: along the last axis, an int one from the end leaving each out, and
           # along a middle axis of 7 (strided lines)
           n("sums", "cumsum", ["x"]),
           n("counts", "cumsum", ["i"], axis=1, exclusive=True, reverse=True),
           n("sums_mid", "cumsum", ["img"], axis=1),
           n("sin", "sin", ["x"]), n("cos", "cos", ["x"]), n("ex", "exp", ["x"]),
           n("log", "log", ["ex"]), n("x3", "mul", ["x"], scalar=3.0),
           n("ceil", "ceil", ["x3"]), n("abs", "abs", ["x"]), n("abs_i", "abs", ["i"]),
           n("sign", "sign", ["x"]), n("sign_i", "sign", ["i"]),
           n("max_ceil", "max_pool2d", ["img"], kernel=3, stride=2, ceil_mode=True),
           n("max_ceil_pad", "max_pool2d", ["img"], kernel=2, stride=2, padding=1,
             ceil_mode=True),
           n("avg_ceil", "avg_pool2d", ["img"], kernel=3, stride=2, ceil_mode=True),
           n("avg_ceil_pad", "avg_pool2d", ["img"], kernel=3, stride=2, padding=1,
             ceil_mode=True, count_include_pad=False),
           n("nearest", "resize2d", ["img"], size=[14, 15]),
           n("nearest_exact", "resize2d", ["img"], size=[10, 4], coordinates="half_pixel",
             rounding="round_prefer_ceil"),
           n("nearest_down", "resize2d", ["img"], size=[3, 5], rounding="round_prefer_floor",
             coordinates="align_corners"),
           n("nearest_ceil", "resize2d", ["img"], size=[9, 9], rounding="ceil"),
           n("bilinear", "resize2d", ["img"], size=[13, 11], mode="linear",
             coordinates="half_pixel"),
           n("bilinear_corners", "resize2d", ["img"], size=[12, 12], mode="linear",
             coordinates="align_corners"),
           n("bilinear_one", "resize2d", ["img"], size=1, mode="linear",
             coordinates="pytorch_half_pixel"),
           n("bilinear_down", "resize2d", ["img"], size=[4, 3], mode="linear",
             coordinates="asymmetric"),
           # bicubic: taps past both edges (clamped), the corners rule, ONNX's A down to one row
           n("bicubic", "resize2d", ["img"], size=[15, 13], mode="cubic",
             coordinates="half_pixel"),
           n("bicubic_corners", "resize2d", ["img"], size=[5, 10], mode="cubic",
             coordinates="align_corners"),
           n("bicubic_down", "resize2d", ["img"], size=[1, 4], mode="cubic",
             coordinates="pytorch_half_pixel", cubic_coeff=-0.5),
           # LLaMA's rotary embedding (fuse_rotary.py): heads of 64 with cos/sin per position
           # (16-byte vectors), 6 features (single elements), and cos/sin of q6's own shape,
           # where the rows collapse into one and each element finds its partner by j % 6
           n("rc", "cos", ["angles"]), n("rs", "sin", ["angles"]),
           n("rope", "rotary_embedding", ["q", "rc", "rs"]),
           n("c6", "cos", ["q6"]), n("s6", "sin", ["q6"]),
           n("rope6", "rotary_embedding", ["q6", "c6", "s6"])],
    outputs=["rope", "rope6", "rms", "rms_res", "rms_plain", "picked", "picked_mid", "permuted",
             "permuted_mid", "sums", "counts", "sums_mid", "sin", "cos", "log", "ceil",
             "abs", "abs_i", "sign", "sign_i", "max_ceil", "max_ceil_pad", "avg_ceil", "avg_ceil_pad", "nearest", "nearest_exact",
             "nearest_down", "nearest_ceil", "bilinear", "bilinear_corners", "bilinear_one",
             "bilinear_down", "bicubic", "bicubic_corners", "bicubic_down"])


# batch norms after no conv, as DenseNet writes them (batchnorm_to_affine.py, fuse_concat.py):
# concats along the channels into a batch norm and an activation (16-byte vectors: 64 + 32 +
# 32 channels; single channels: a piece of 12; nine pieces), a concat that is also an output
# (not fused), one along another axis (not fused), a concat into a program with a one-value
# operand, and lone batch norms into relu6, silu and nothing; only the ends are outputs, so
# the optimizer fuses what it can
CONCAT_NORMS = dict(
    inputs={"a": {"shape": ["batch", 6, 5, 64]}, "b": {"shape": ["batch", 6, 5, 32]},
            "c": {"shape": ["batch", 6, 5, 32]}, "d": {"shape": ["batch", 6, 5, 12]},
            "e": {"shape": ["batch", 6, 5, 24]}},
    graph=[n("cat", "concat", ["a", "b", "c"], axis=3), n("cat_bn", "batch_norm", ["cat"]),
           n("dense", "relu", ["cat_bn"]),
           n("cat_odd", "concat", ["a", "d"], axis=-1),
           n("odd_bn", "batch_norm", ["cat_odd"], eps=1e-3),
           n("odd_relu6", "relu6", ["odd_bn"]),
           n("cat_many", "concat", ["a", "b", "c", "b", "c", "e", "b", "c", "a"], axis=3),
           n("many_bn", "batch_norm", ["cat_many"]), n("many_relu", "relu", ["many_bn"]),
           n("cat_kept", "concat", ["b", "c"], axis=3), n("kept_bn", "batch_norm", ["cat_kept"]),
           n("kept_relu", "relu", ["kept_bn"]),
           n("cat_rows", "concat", ["b", "c"], axis=1), n("rows_bn", "batch_norm", ["cat_rows"]),
           n("rows_relu", "relu", ["rows_bn"]),
           n("one", "parameter", [], shape=[1], weights={"value": "one_value"}),
           n("cat_shifted", "concat", ["c", "b"], axis=3),
           n("shifted", "add", ["cat_shifted", "one"]), n("shifted_relu", "relu", ["shifted"]),
           n("e_bn", "batch_norm", ["e"]), n("bn_relu6", "relu6", ["e_bn"]),
           n("a_bn", "batch_norm", ["a"]), n("bn_silu", "silu", ["a_bn"]),
           n("bn_plain", "batch_norm", ["d"], eps=1e-2)],
    outputs=["dense", "odd_relu6", "many_relu", "cat_kept", "kept_relu", "rows_relu",
             "shifted_relu", "bn_relu6", "bn_silu", "bn_plain"])


# permutes that swap the innermost axes (GPU: transpose.cu.j2's 32 x 32 tiles): ShuffleNet's
# layout changes both ways (58 channels x 28 x 28 pixels: partial tiles), one with a dim between
# (merged); and 3-channel images to NHWC and back (GPU: short_transpose.cu.j2), with pixels in
# whole 16-byte vectors and with a partial last one; the GPU tests build it
LAYOUT_SWAPS = dict(
    inputs={"nhwc": {"shape": ["batch", 28, 28, 58]}, "nchw": {"shape": ["batch", 58, 7, 7]},
            "img": {"shape": ["batch", 3, 20, 20]}, "mid": {"shape": ["batch", 40, 3, 24]},
            "odd_img": {"shape": ["batch", 3, 5, 7]}, "img_hwc": {"shape": ["batch", 4, 6, 3]},
            "odd_hwc": {"shape": ["batch", 5, 7, 3]}},
    graph=[n("to_nchw", "permute", ["nhwc"], dims=[0, 3, 1, 2]),
           n("to_nhwc", "permute", ["nchw"], dims=[0, 2, 3, 1]),
           n("img_nhwc", "permute", ["img"], dims=[0, 2, 3, 1]),
           n("mid_swap", "permute", ["mid"], dims=[0, 2, 3, 1]),
           n("odd_img_nhwc", "permute", ["odd_img"], dims=[0, 2, 3, 1]),
           n("img_nchw", "permute", ["img_hwc"], dims=[0, 3, 1, 2]),
           n("odd_nchw", "permute", ["odd_hwc"], dims=[0, 3, 1, 2])],
    outputs=["to_nchw", "to_nhwc", "img_nhwc", "mid_swap", "odd_img_nhwc", "img_nchw",
             "odd_nchw"])


# chains of data movement that passes/fuse_data_movement.py makes one strided_copy: ShuffleNet's
# concat -> channel shuffle -> split halves (one channel-padded to 64 as pad_channels does before
# a 1x1 conv), read from the concat's pieces, an NCHW image -> NHWC -> channel pad, a pad before a
# permute and a strided slice (pad value -1.5, bounds on an outer axis), a chain cut at a value
# that is also an output, one through a reshape that is no strided view (left as it is) and a
# swap of the inner axes then a slice (cpu: the tiled transpose), and a transposed concat whose
# rows cross from one piece into the other; built optimized by
# cpu/test_movement_chains.py, cuda_op_groups.py (also on the host) and the hipcc test
MOVEMENT_CHAINS = dict(
    inputs={"a": {"shape": ["batch", 6, 5, 58]}, "b": {"shape": ["batch", 6, 5, 58]},
            "img": {"shape": ["batch", 3, 8, 8]}, "s": {"shape": ["batch", 4, 6, 12]},
            "s2": {"shape": ["batch", 4, 6, 12]},  # swap_rows of s would be s_swap (merged)
            "c1": {"shape": ["batch", 4, 3]}, "c2": {"shape": ["batch", 4, 5]}},
    graph=[n("cat", "concat", ["a", "b"], axis=3),
           n("view", "reshape", ["cat"], shape=["batch", 6, 5, 2, 58]),
           n("shuffled", "permute", ["view"], dims=[0, 1, 2, 4, 3]),
           n("merged", "reshape", ["shuffled"], shape=["batch", 6, 5, 116]),
           n("halves", "split", ["merged"], axis=3, sizes=[58, 58]),
           n("left", "relu", ["halves:0"]),
           n("right", "pad", ["halves:1"], pads=[0, 0, 0, 0, 0, 0, 0, 6]),
           n("img_nhwc", "permute", ["img"], dims=[0, 2, 3, 1]),
           n("img_pad", "pad", ["img_nhwc"], pads=[0, 0, 0, 0, 0, 0, 0, 5]),
           n("s_pad", "pad", ["s"], pads=[0, 0, 1, 2, 0, 0, 0, 4], value=-1.5),
           n("s_cf", "permute", ["s_pad"], dims=[0, 3, 1, 2]),
           n("pad_perm_slice", "slice", ["s_cf"], axis=2, start=1, step=2),
           n("s_t", "permute", ["s"], dims=[0, 2, 1, 3]),
           n("s_t_cols", "slice", ["s_t"], axis=3, start=2, end=10),
           n("s_t_cut", "pad", ["s_t_cols"], pads=[0, 0, 0, 0, 1, 0, 0, 3]),
           n("s_swap", "permute", ["s"], dims=[0, 1, 3, 2]),
           n("s_flat", "reshape", ["s_swap"], shape=["batch", 4, 72]),
           n("s_odd", "reshape", ["s_flat"], shape=["batch", 4, 8, 9]),
           n("odd_relu", "relu", ["s_odd"]),
           n("swap_rows", "permute", ["s2"], dims=[0, 1, 3, 2]),
           n("swap_cut", "slice", ["swap_rows"], axis=1, start=1, end=3),
           n("joined", "concat", ["c1", "c2"], axis=2),
           n("joined_t", "permute", ["joined"], dims=[0, 2, 1]),
           n("across", "slice", ["joined_t"], axis=1, start=1, end=7)],
    outputs=["left", "right", "img_pad", "pad_perm_slice", "s_t", "s_t_cut", "odd_relu",
             "swap_cut", "across"])


# A mixture of experts' matrices (grouped_matmul): 5 * batch rows in three groups ending at rows
# 1, 3 and 5 (the rows past them zero): by [3, 8, 16] weights and a transposed [3, 24, 8] view
# (CUTLASS's grouped GEMM on the cuda targets in 16-bit types: whole 16-byte vectors), and into
# 6 outputs (the GPU layer's kernel, as for float32 and the rocm target)
EXPERTS = dict(
    inputs={"x": {"shape": ["batch", 5, 8]}},
    graph=[n("rows", "reshape", ["x"], shape=[-1, 8]),
           n("ends", "iota", [], shape=[3], start=1, step=2, dtype="int32"),
           n("w", "parameter", [], shape=[3, 8, 16]), n("wt", "parameter", [], shape=[3, 24, 8]),
           n("w6", "parameter", [], shape=[3, 8, 6]),
           n("by_w", "grouped_matmul", ["rows", "w", "ends"]),
           n("by_wt", "grouped_matmul", ["rows", "wt", "ends"], transpose_b=True),
           n("by_w6", "grouped_matmul", ["rows", "w6", "ends"])],
    outputs=["by_w", "by_wt", "by_w6"])
