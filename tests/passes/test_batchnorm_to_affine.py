from ait_build.passes import batchnorm_to_affine, fold_batchnorm, fuse_elementwise

from .helpers import check_pass, model, ops, target

IMG = "{image: {shape: [batch, 6, 5, 8]}}"


def test_leftover_batch_norms_become_affines_that_fuse_with_their_activation():
    g = model("""
        - {name: pool, op: max_pool2d, kernel: 2, stride: 2}
        - {name: bn, op: batch_norm, eps: 0.001}
        - {name: act, op: relu6}
        - {name: bn2, op: batch_norm, inputs: [image]}
        """, IMG, "[act, bn2]")
    after, summary = check_pass(g, batchnorm_to_affine.run)
    assert summary == "2 batch norms made per-channel affines"
    assert ops(after) == ["max_pool2d", "parameter", "parameter", "mul", "add", "relu6",
                          "parameter", "parameter", "mul", "add"]
    add = after.node("bn")
    assert add.op == "add" and add.outputs == ["bn"] and add.inputs == ["bn.scaled", "bn.shift"]
    assert after.node("bn.scale").weights == {"value": "bn.affine_scale"}
    assert [d.value for d in after.tensors["bn.scale"].shape] == [8]
    assert "bn.weight" in after.weights  # the spec's own weights stay
    fused, _ = check_pass(after, fuse_elementwise.run)
    assert ops(fused) == ["max_pool2d", "parameter", "parameter", "fused_elementwise",
                          "parameter", "parameter", "fused_elementwise"]
    assert [s[0] for s in fused.node("act").attrs["program"]] == ["mul", "add", "relu6"]


def test_batch_norms_that_fold_are_left_to_fold_batchnorm():
    g = model("""
        - {name: conv, op: conv2d, out_channels: 8, kernel: 1, bias: false}
        - {name: bn, op: batch_norm}
        """, IMG, "[bn]")
    folded, _ = check_pass(g, fold_batchnorm.run)
    after, summary = check_pass(folded, batchnorm_to_affine.run, target())
    assert summary == "" and ops(after) == ["conv2d"]
