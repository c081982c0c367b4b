import numpy as np

from ait_build.passes import fold_constants

from .helpers import check_pass, model, node_of, ops

X = "{x: {shape: [batch, 4, 8]}}"


def test_weight_only_chain_becomes_one_parameter_read():
    g = model("""
        - {name: pos, op: parameter, shape: [1, 4, 8], weights: {value: pos_table}}
        - {name: scaled, op: mul, inputs: [pos], scalar: 2.0}
        - {name: shifted, op: tanh, inputs: [scaled]}
        - {name: y, op: add, inputs: [x, shifted]}
        """, X, "[y]")
    after, summary = check_pass(g, fold_constants.run)
    assert ops(after) == ["parameter", "parameter", "parameter", "add"]
    assert summary == "2 nodes folded into weights"
    folded = after.node("shifted")
    assert folded.op == "parameter" and folded.weights == {"value": "shifted.folded_weight"}
    np.testing.assert_allclose(after.weights.get("shifted.folded_weight"),
                               np.tanh(2 * g.weights.get("pos_table")), rtol=1e-6)
    assert "shifted.folded_weight" not in g.weights  # the source graph's store is untouched


def test_batch_dependent_and_output_nodes_are_not_folded():
    g = model("""
        - {name: cls, op: parameter, shape: [1, 1, 8], weights: {value: cls_token}}
        - {name: cls_b, op: expand, inputs: [cls], shape: [batch, 1, 8]}
        - {name: y, op: concat, inputs: [cls_b, x], axis: 1}
        - {name: z, op: relu, inputs: [cls]}
        """, X, "[y, z]")
    after, summary = check_pass(g, fold_constants.run)
    assert summary == ""
    assert ops(after) == ops(g)


def test_folding_never_bloats_weights():
    g = model("""
        - {name: small, op: parameter, shape: [1, 1, 1], weights: {value: one}}
        - {name: big, op: expand, inputs: [small], shape: [64, 64, 8]}
        - {name: y, op: add, inputs: [x, small]}
        - {name: z, op: relu, inputs: [big]}
        - {name: w, op: reshape, inputs: [z], shape: [-1]}
        """, X, "[y, w]")
    after, summary = check_pass(g, fold_constants.run)
    assert summary == ""  # expand would grow 1 value to 32768; what reads it stays unfolded too
    assert node_of(after, "expand").name == "big" and after.node("z").op == "relu"


def test_lookups_fold_whatever_their_growth():
    # Swin-S's relative position bias: a 169 x 12 table read at 49 x 49 positions (28812 values
    # from 4429: more than an expand may grow); the run would compute the same every call
    g = model("""
        - {name: table, op: parameter, shape: [169, 12], weights: {value: bias_table}}
        - {name: index, op: parameter, shape: [2401], dtype: int64, weights: {value: bias_index}}
        - {name: rows, op: gather, inputs: [table, index], axis: 0}
        - {name: bias, op: reshape, inputs: [rows], shape: [1, 49, 49, 12]}
        - {name: y, op: add, inputs: [x, bias]}
        """, "{x: {shape: [batch, 49, 49, 12]}}", "[y]")
    index = np.random.default_rng(0).integers(0, 169, 2401)
    g.weights.set("bias_index", index)
    after, summary = check_pass(g, fold_constants.run)
    assert summary == "2 nodes folded into weights" and "gather" not in ops(after)
    np.testing.assert_array_equal(after.weights.get("bias.folded_weight"),
                                  g.weights.get("bias_table")[index].reshape(1, 49, 49, 12))


def test_an_embedding_of_constant_ids_folds():
    # T5's position bias: 32 buckets x 12 heads read at 128 x 128 constant bucket ids
    g = model("""
        - {name: buckets, op: parameter, shape: [128, 128], dtype: int64, weights: {value: ids}}
        - {name: bias, op: embedding, inputs: [buckets], num_embeddings: 32, embedding_dim: 12,
           weights: {weight: table}}
        - {name: y, op: add, inputs: [x, bias]}
        """, "{x: {shape: [batch, 128, 128, 12]}}", "[y]")
    ids = np.random.default_rng(1).integers(0, 32, (128, 128))
    g.weights.set("ids", ids)
    after, summary = check_pass(g, fold_constants.run)
    assert summary == "1 nodes folded into weights" and "embedding" not in ops(after)
    np.testing.assert_array_equal(after.weights.get("bias.folded_weight"),
                                  g.weights.get("table")[ids])


def test_large_weights_are_neither_folded_nor_loaded(monkeypatch):
    """Folding reads its inputs' values at build time: over INPUT_LIMIT elements (a 2^31-element
    parameter took 16 GiB while `graph --target cpu` ran) a node is left to the run, and a weight
    no folded node reads is never loaded."""
    g = model("""
        - {name: pos, op: parameter, shape: [1, 4, 8], weights: {value: pos_table}}
        - {name: shifted, op: tanh, inputs: [pos]}
        - {name: y, op: add, inputs: [x, shifted]}
        """, X, "[y]")
    monkeypatch.setattr(fold_constants, "INPUT_LIMIT", 31)
    loaded = []
    real_get = type(g.weights).get
    monkeypatch.setattr(type(g.weights), "get", lambda self, name: loaded.append(name) or
                        real_get(self, name))
    assert fold_constants.run(g.copy(), None) == "" and loaded == []
    after, summary = check_pass(g, fold_constants.run)
    assert summary == "" and after.node("shifted").op == "tanh"
    monkeypatch.setattr(fold_constants, "INPUT_LIMIT", 32)
    loaded.clear()
    fold_constants.run(g.copy(), None)
    assert "pos_table" in loaded  # at the limit it folds, reading the weight
