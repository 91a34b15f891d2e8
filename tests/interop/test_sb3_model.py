"""Foreign SB3 model files read as bounded, safe input: a member that inflates past the limit is refused
before it fills memory (a zip bomb), and every malformed member is one line naming the file and the
member, never torch's advice to unpickle."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from thrust_app.interop.sb3_model import SB3FormatError, read_sb3_zip

DATA = b'{"policy_class": {"__module__": "stable_baselines3.common.policies"}}'


def state_dict_bytes(value: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def model_zip(tmp_path: Path, data: bytes = DATA, policy: bytes | None = None, **members: bytes) -> Path:
    path = tmp_path / "model.zip"
    policy = state_dict_bytes({"action_net.weight": torch.zeros(2, 4)}) if policy is None else policy
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data", data)
        archive.writestr("policy.pth", policy)
        for name, content in members.items():
            archive.writestr(name, content)
    return path


class Payload:
    def __reduce__(self):
        return (print, ("this must never run",))


@pytest.mark.parametrize("member", ["data", "policy.pth"])
def test_a_member_that_inflates_past_the_limit_is_refused_naming_it(tmp_path, monkeypatch, member):
    monkeypatch.setenv("THRUST_IMPORT_MAX_MB", "4")
    zeros = bytes(40 * 2**20)  # 40 MB of zeros: a 40 kB zip member
    path = model_zip(tmp_path, **({"data": zeros} if member == "data" else {"policy": zeros}))
    assert path.stat().st_size < 2**20
    with pytest.raises(SB3FormatError, match=rf"model.zip: {member} inflates to more than 4 MB.*THRUST_IMPORT_MAX_MB"):
        read_sb3_zip(path)


def test_the_limit_setting_is_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("THRUST_IMPORT_MAX_MB", "lots")
    with pytest.raises(SB3FormatError, match="THRUST_IMPORT_MAX_MB must be a whole number of megabytes"):
        read_sb3_zip(model_zip(tmp_path))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"policy": pickle.dumps(Payload())}, "its policy.pth holds objects other than tensors, which Thrust never unpickles"),
        ({"policy": b""}, "its policy.pth is not a readable torch file"),
        ({"policy": state_dict_bytes([torch.zeros(2)])}, "its policy.pth holds a list, not a state dict of tensors"),
        ({"data": b"[1, 2]"}, "its data member is a JSON list, not an object"),
        ({"data": b"{not json"}, "its data member is not JSON"),
        ({"data": b"\xff\xfe"}, "its data member is not JSON"),
    ],
)
def test_a_malformed_member_is_one_line_naming_the_file_and_member(tmp_path, capsys, members, message):
    path = model_zip(tmp_path, **members)
    with pytest.raises(SB3FormatError) as refused:
        read_sb3_zip(path)
    text = str(refused.value)
    assert message in text and str(path) in text and "\n" not in text and "weights_only" not in text
    assert "this must never run" not in capsys.readouterr().out
