"""runtime/settings.py: a library's AIT_* settings are set only while its Model is created; the
caller's environment is as it was afterwards, whether it had the variables or not, and after an
error too."""

from __future__ import annotations

import os

import pytest

from ait_build.runtime import settings


def test_settings_hold_for_the_block_and_are_restored(monkeypatch):
    monkeypatch.setenv("AIT_NUM_THREADS", "3")
    monkeypatch.delenv("AIT_CUDA_GRAPHS", raising=False)
    with settings.environment({"AIT_NUM_THREADS": 1, "AIT_CUDA_GRAPHS": "0"}):
        assert os.environ["AIT_NUM_THREADS"] == "1" and os.environ["AIT_CUDA_GRAPHS"] == "0"
    assert os.environ["AIT_NUM_THREADS"] == "3" and "AIT_CUDA_GRAPHS" not in os.environ


def test_settings_are_restored_when_creation_fails(monkeypatch, tmp_path):
    monkeypatch.delenv("AIT_CUDA_GRAPHS", raising=False)
    with pytest.raises(Exception, match="manifest"):
        settings.model_with(str(tmp_path), {"AIT_CUDA_GRAPHS": "1"})  # not a build folder
    assert "AIT_CUDA_GRAPHS" not in os.environ


def test_the_model_is_created_under_the_settings(monkeypatch):
    seen = []
    monkeypatch.setattr(settings, "Model", lambda build_dir, **kw: seen.append(
        (build_dir, kw, os.environ.get("AIT_NUM_THREADS"))) or "model")
    monkeypatch.delenv("AIT_NUM_THREADS", raising=False)
    assert settings.model_with("b", {"AIT_NUM_THREADS": "2"}, device=0) == "model"
    assert seen == [("b", {"device": 0}, "2")] and "AIT_NUM_THREADS" not in os.environ
