"""Import models the tests do not cover and compare each spec's NumPy reference with PyTorch:
torchvision's classifiers at a small image size, and transformers models in tiny random
configurations (their factories below). Each line says how the import went, the nodes and the
largest relative L2 error over the outputs against the source module the spec's `source:`
rebuilds (float32). A failed import prints its last lines.

    PYTHONPATH=bench python bench/import_sweep.py all --out /tmp/sweep
    PYTHONPATH=bench python bench/import_sweep.py alexnet bloom --out /tmp/sweep

Then, for a cpu build checked against the reference:
    ait-build build /tmp/sweep/bloom.yaml --target cpu && ait-build run build/cpu/bloom \\
        --random-input --check --spec /tmp/sweep/bloom.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import numpy as np

# torchvision factory -> image size (small where the model allows: the reference runs in NumPy)
VISION = {"alexnet": 96, "vgg11_bn": 64, "googlenet": 64, "inception_v3": 96, "mnasnet0_5": 64,
          "mobilenet_v2": 64, "squeezenet1_1": 64, "efficientnet_b0": 64, "regnet_y_400mf": 64,
          "resnext50_32x4d": 64, "wide_resnet50_2": 64, "shufflenet_v2_x0_5": 64,
          "swin_v2_t": 64, "convnext_tiny": 64, "mobilenet_v3_small": 64, "regnet_x_400mf": 64,
          "densenet121": 64, "efficientnet_b3": 64, "swin_t": 64, "maxvit_t": 224,
          "vit_b_16": 224}


def _hf(config_class: str, model_class: str, **config):
    import torch
    import transformers
    torch.manual_seed(0)
    return getattr(transformers, model_class)(getattr(transformers, config_class)(**config)).eval()


TEXT = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64)
IMAGE = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=4, intermediate_size=64)
AUDIO = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
             conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 2),
             num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4)
# name -> (factory, image size, an audio length (an expression of frames) or None for token ids
# [batch, seq], a fixed seq when the model reduces over it)
TRANSFORMERS = {
    "albert": (lambda: _hf("AlbertConfig", "AlbertModel", embedding_size=16,
                           max_position_embeddings=40, **TEXT), None, None),
    "distilbert": (lambda: _hf("DistilBertConfig", "DistilBertModel", vocab_size=100, dim=32,
                               n_layers=2, n_heads=4, hidden_dim=64,
                               max_position_embeddings=40), None, None),
    "bloom": (lambda: _hf("BloomConfig", "BloomModel", vocab_size=100, hidden_size=32, n_layer=2,
                          n_head=4, use_cache=False), None, None),
    "opt": (lambda: _hf("OPTConfig", "OPTModel", vocab_size=100, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                        max_position_embeddings=40, word_embed_proj_dim=32, use_cache=False),
            None, None),
    "gptj": (lambda: _hf("GPTJConfig", "GPTJModel", vocab_size=100, n_embd=32, n_layer=2,
                         n_head=4, rotary_dim=4, n_positions=40, use_cache=False), None, None),
    "mistral": (lambda: _hf("MistralConfig", "MistralModel", num_key_value_heads=2,
                            max_position_embeddings=64, use_cache=False, **TEXT), None, None),
    "phi": (lambda: _hf("PhiConfig", "PhiModel", max_position_embeddings=64, use_cache=False,
                        **TEXT), None, None),
    "falcon": (lambda: _hf("FalconConfig", "FalconModel", vocab_size=100, hidden_size=32,
                           num_hidden_layers=2, num_attention_heads=4, use_cache=False), None,
               None),
    "gemma": (lambda: _hf("GemmaConfig", "GemmaModel", num_key_value_heads=1, head_dim=8,
                          max_position_embeddings=64, use_cache=False, **TEXT), None, None),
    "clip_text": (lambda: _hf("CLIPTextConfig", "CLIPTextModel", vocab_size=100, hidden_size=32,
                              num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                              max_position_embeddings=40), None, 16),
    "dinov2": (lambda: _hf("Dinov2Config", "Dinov2Model", **IMAGE), 32, None),
    "segformer": (lambda: _hf("SegformerConfig", "SegformerModel", num_encoder_blocks=2,
                              depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                              patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                              mlp_ratios=[2, 2]), 64, None),
    "levit": (lambda: _hf("LevitConfig", "LevitModel", image_size=64), 64, None),
    "poolformer": (lambda: _hf("PoolFormerConfig", "PoolFormerModel",
                               hidden_sizes=[16, 32, 32, 32], depths=[1, 1, 1, 1]), 64, None),
    # found by the sweep of 7 December 2026 (bench/results/cpu/import_sweep/): the default
    # use_cache=True (an empty key/value cache concatenated before the keys), a pointwise conv1d
    # over the symbolic sequence (SqueezeBERT), and classes no sweep had imported
    "opt_cached": (lambda: _hf("OPTConfig", "OPTModel", vocab_size=100, hidden_size=32,
                               num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                               max_position_embeddings=40, word_embed_proj_dim=32), None, None),
    "bloom_cached": (lambda: _hf("BloomConfig", "BloomModel", vocab_size=100, hidden_size=32,
                                 n_layer=2, n_head=4), None, None),
    "gpt_neox": (lambda: _hf("GPTNeoXConfig", "GPTNeoXModel", max_position_embeddings=64,
                             **TEXT), None, None),
    "qwen2": (lambda: _hf("Qwen2Config", "Qwen2Model", num_key_value_heads=2,
                          max_position_embeddings=64, **TEXT), None, None),
    "squeezebert": (lambda: _hf("SqueezeBertConfig", "SqueezeBertModel", embedding_size=32,
                                max_position_embeddings=40, **TEXT), None, None),
    # a depthwise conv1d (kernel 9) over the symbolic sequence and unfold (composites.py)
    "convbert": (lambda: _hf("ConvBertConfig", "ConvBertModel", embedding_size=32,
                             max_position_embeddings=40, **TEXT), None, None),
    "deberta_v2": (lambda: _hf("DebertaV2Config", "DebertaV2Model", max_position_embeddings=40,
                               **TEXT), None, None),
    "electra": (lambda: _hf("ElectraConfig", "ElectraModel", embedding_size=16,
                            max_position_embeddings=40, **TEXT), None, None),
    "mpnet": (lambda: _hf("MPNetConfig", "MPNetModel", max_position_embeddings=40, **TEXT), None,
              None),
    "xlm_roberta": (lambda: _hf("XLMRobertaConfig", "XLMRobertaModel",
                                max_position_embeddings=40, **TEXT), None, None),
    "esm": (lambda: _hf("EsmConfig", "EsmModel", pad_token_id=1, max_position_embeddings=40,
                        **TEXT), None, None),
    "deit": (lambda: _hf("DeiTConfig", "DeiTModel", **IMAGE), 32, None),
    "clip_vision": (lambda: _hf("CLIPVisionConfig", "CLIPVisionModel", **IMAGE), 32, None),
    "swin_hf": (lambda: _hf("SwinConfig", "SwinModel", image_size=32, patch_size=4, embed_dim=16,
                            depths=[1, 1], num_heads=[1, 2], window_size=4), 32, None),
    "convnext_hf": (lambda: _hf("ConvNextConfig", "ConvNextModel", hidden_sizes=[8, 16, 32, 64],
                                depths=[1, 1, 1, 1]), 64, None),
    # speech: strided conv1d feature encoders over raw audio whose length is an expression the
    # strides divide (docs/import.md, Audio of symbolic length): 20*frames + 10 samples give
    # `frames` frames through strides 5, 2, 2 and kernels 10, 3, 2; wav2vec2_base is the
    # default config's encoder (320*frames + 80) with one transformer layer
    "wav2vec2_audio": (lambda: _hf("Wav2Vec2Config", "Wav2Vec2Model", feat_extract_norm="layer",
                                   do_stable_layer_norm=True, **AUDIO), "20*frames+10", None),
    "hubert": (lambda: _hf("HubertConfig", "HubertModel", **AUDIO), "20*frames+10", None),
    "data2vec_audio": (lambda: _hf("Data2VecAudioConfig", "Data2VecAudioModel",
                                   conv_pos_kernel_size=5, **AUDIO), "20*frames+10", None),
    "wavlm": (lambda: _hf("WavLMConfig", "WavLMModel", **AUDIO), "20*frames+10", None),
    "wav2vec2_base": (lambda: _hf("Wav2Vec2Config", "Wav2Vec2Model", num_hidden_layers=1),
                      "320*frames+80", None),
    # the second sweep of 7 December 2026 (bench/results/cpu/import_sweep/, "Second sweep"):
    # XLNet needed the guards torch.export cannot prove (ceil(float(2 * seq))) and an arange
    # from a run-time size; the others imported as they were
    "xlnet": (lambda: _hf("XLNetConfig", "XLNetModel", vocab_size=100, d_model=32, n_layer=2,
                          n_head=4, d_inner=64, use_mems_eval=False), None, None),
    "roberta_prelayernorm": (lambda: _hf("RobertaPreLayerNormConfig", "RobertaPreLayerNormModel",
                                         max_position_embeddings=40, **TEXT), None, None),
    "roformer": (lambda: _hf("RoFormerConfig", "RoFormerModel", embedding_size=32,
                             max_position_embeddings=40, **TEXT), None, None),
    "big_bird": (lambda: _hf("BigBirdConfig", "BigBirdModel", attention_type="original_full",
                             max_position_embeddings=40, **TEXT), None, None),
    "layoutlm": (lambda: _hf("LayoutLMConfig", "LayoutLMModel", max_position_embeddings=40,
                             **TEXT), None, None),
    "phi3": (lambda: _hf("Phi3Config", "Phi3Model", num_key_value_heads=2, pad_token_id=0,
                         max_position_embeddings=64, **TEXT), None, None),
    "starcoder2": (lambda: _hf("Starcoder2Config", "Starcoder2Model", num_key_value_heads=2,
                               max_position_embeddings=64, **TEXT), None, None),
    "olmo": (lambda: _hf("OlmoConfig", "OlmoModel", pad_token_id=0, max_position_embeddings=64,
                         **TEXT), None, None),
    "cohere": (lambda: _hf("CohereConfig", "CohereModel", num_key_value_heads=2,
                           max_position_embeddings=64, **TEXT), None, None),
    "gpt_bigcode": (lambda: _hf("GPTBigCodeConfig", "GPTBigCodeModel", vocab_size=100, n_embd=32,
                                n_layer=2, n_head=4, n_positions=40), None, None),
    "codegen": (lambda: _hf("CodeGenConfig", "CodeGenModel", vocab_size=100, n_embd=32,
                            n_layer=2, n_head=4, rotary_dim=4, n_positions=40), None, None),
    "biogpt": (lambda: _hf("BioGptConfig", "BioGptModel", max_position_embeddings=40, **TEXT),
               None, None),
    "xglm": (lambda: _hf("XGLMConfig", "XGLMModel", vocab_size=100, d_model=32, num_layers=2,
                         attention_heads=4, ffn_dim=64, max_position_embeddings=40), None, None),
    "data2vec_vision": (lambda: _hf("Data2VecVisionConfig", "Data2VecVisionModel",
                                    use_relative_position_bias=True, **IMAGE), 32, None),
    "swinv2_hf": (lambda: _hf("Swinv2Config", "Swinv2Model", image_size=32, patch_size=4,
                              embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4), 32,
                  None),
    "regnet_hf": (lambda: _hf("RegNetConfig", "RegNetModel", hidden_sizes=[8, 16, 32, 64],
                              depths=[1, 1, 1, 1], groups_width=8, embedding_size=8), 64, None),
    "bit": (lambda: _hf("BitConfig", "BitModel", hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                        embedding_size=8, num_groups=4), 64, None),
    "glpn": (lambda: _hf("GLPNConfig", "GLPNForDepthEstimation", num_encoder_blocks=2,
                         depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                         num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2],
                         mlp_ratios=[2, 2], decoder_hidden_size=16), 64, None),
}
for _name, (_make, _, _) in TRANSFORMERS.items():  # MODULE:FACTORY names for `ait-build import`
    globals()[_name] = _make


def rel(a, b) -> float:
    return float(np.linalg.norm((a - b).ravel()) / (np.linalg.norm(b.ravel()) + 1e-30))


def one(name: str, out_dir: str) -> str:
    import torch

    from ait_build.bench.source_twin import comparison_twin
    from ait_build.ops.reference import run_reference
    from ait_build.spec.model import load_model
    spec = os.path.join(out_dir, f"{name}.yaml")
    rng = np.random.default_rng(0)
    if name in VISION:
        size = VISION[name]
        factory, args = f"torchvision.models:{name}", {"weights": None}
        if name == "inception_v3":
            args.update(aux_logits=False, init_weights=True)
        flags = ["--args", json.dumps(args), "--input", f"x:batch,3,{size},{size}"]
        feed = {"x": rng.standard_normal((1, 3, size, size)).astype(np.float32)}
    else:
        _, size, seq = TRANSFORMERS[name]
        factory = f"import_sweep:{name}"
        if isinstance(size, str):  # raw audio [batch, samples], at 8 frames
            flags = ["--input", f"input_values:batch,{size}", "--dim", "frames=2:64:8"]
            samples = eval(size, {"__builtins__": {}}, {"frames": 8})
            feed = {"input_values": rng.standard_normal((1, samples)).astype(np.float32)}
        elif size:
            flags = ["--input", f"pixel_values:batch,3,{size},{size}"]
            feed = {"pixel_values": rng.standard_normal((1, 3, size, size)).astype(np.float32)}
        else:
            flags = ["--input", f"input_ids:batch,{seq or 'seq'}:int64"]
            flags += [] if seq else ["--dim", "seq=3:16:8"]
            feed = {"input_ids": rng.integers(3, 100, (1, seq or 8))}
    cmd = ["ait-build", "import", "torch", factory, *flags, "--dim", "batch=1:2:1", "-o", spec]
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        return "IMPORT FAILED: " + " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
    graph = load_model(spec)
    ref = run_reference(graph, feed)
    twin = comparison_twin(spec, graph, name)
    with torch.no_grad():
        want = twin.module(*twin.to_args(feed))
    want = want if isinstance(want, (tuple, list)) else [want]
    error = max(rel(ref[o], w.numpy()) for o, w in zip(twin.outputs, want))
    return (f"imported in {time.time() - start:.0f} s, {len(graph.nodes)} nodes, relative L2 "
            f"against PyTorch {error:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="names, or 'all'")
    ap.add_argument("--out", default="sweep", help="folder for the specs and weights")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = list(VISION) + list(TRANSFORMERS) if args.models == ["all"] else args.models
    for name in names:
        try:
            print(name, one(name, args.out), flush=True)
        except Exception as exc:  # a sweep reports every model, whatever one of them does
            print(name, "ERROR", type(exc).__name__, str(exc)[:300], flush=True)


if __name__ == "__main__":
    main()
