"""One core's rate of ONNX Runtime's GEMM (MLAS) on the weight-GEMM shapes of
bench/panel_vs_mkl.cpp: a one-node MatMul model with a constant B (which ONNX Runtime packs once),
one intra-op thread, the best of several rounds, GFLOP/s. Run pinned to one core, beside that
program, to compare our AVX2/AVX-512 tiles with MLAS:

    taskset -c 1 python bench/ort_matmul.py [--shapes 3136x256x256,196x1024x1024]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

SHAPES = "128x768x2304,128x768x768,3136x64x256,784x512x128,49x512x2048,3136x24x72,196x80x480," \
         "3136x256x256,784x512x512,196x1024x1024,49x2048x2048"


def session(K: int, N: int, M: int):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    b = np.random.default_rng(0).random((K, N), dtype=np.float32) - 0.5
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])], "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [M, K])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [M, N])],
        [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES, help="MxKxN,... (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("M,K,N,ort_gflops")
    for shape in args.shapes.split(","):
        M, K, N = map(int, shape.split("x"))
        sess = session(K, N, M)
        a = np.random.default_rng(1).random((M, K), dtype=np.float32)
        flops = 2.0 * M * N * K
        calls = max(3, min(1000, int(2e9 / flops)))  # about 2 GFLOP a round
        best = float("inf")
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(calls):
                sess.run(None, {"a": a})
            best = min(best, (time.perf_counter() - start) / calls)
        print(f"{M},{K},{N},{flops / best / 1e9:.4g}")


if __name__ == "__main__":
    main()
