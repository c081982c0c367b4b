#!/bin/bash
# one round of the seven public CNNs against ONNX Runtime on this AVX2 machine (AMD Zen 3, 2 vCPUs)
# bash bench/results/cpu/amd_avx2_zen3_pass_depth/round.sh N
exec bash "$(dirname "$0")/../../../cpu_ort_round.sh" bench/results/cpu/amd_avx2_zen3_pass_depth "$1"
