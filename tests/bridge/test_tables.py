"""The code tables a view reads through: dtype codes and device type names are torch's own.

Every device type torch can describe (``torch._C._autograd.DeviceType``) is in the table
under torch's name (``t.device.type``), and the stable ABI's ``aoti_torch_device_type_*``
codes agree with it. privateuse1 is named as torch names it at the time of the view,
after ``torch.utils.rename_privateuse1_backend`` too. A code torch names not is refused
as unknown (fault injection). The resolution is per process, so the rename runs in a
child.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import bridge
from bridge import _bridge, _resolve
from helpers.child import run_ok
from helpers.expect import torch_answer, view_fields
from helpers.parity import VIEWS, paths_here, refused_on_every_entry


def test_privateuse1_name_is_torchs_before_a_rename():
    bridge.available_paths()  # the table exists
    code = int(torch._C._autograd.DeviceType.PrivateUse1)
    assert _bridge._device_name(code) == torch._C._get_privateuse1_backend_name()
    assert _bridge._device_names()[code] == torch._C._get_privateuse1_backend_name()


RENAME = """
import torch, bridge
from bridge import _bridge
from helpers.expect import expected_paths, torch_answer, view_fields
code = int(torch._C._autograd.DeviceType.PrivateUse1)
t = torch.arange(6.0).reshape(2, 3)
if {before}:
    for p, ok in expected_paths().items():
        if ok:
            assert view_fields(getattr(bridge, "view_" + p)(t)) == torch_answer(t)
    assert _bridge._device_name(code) == torch._C._get_privateuse1_backend_name() == "privateuseone"
torch.utils.rename_privateuse1_backend("foo")
assert torch._C._get_privateuse1_backend_name() == "foo"
bridge.available_paths()
assert _bridge._device_name(code) == "foo", _bridge._device_name(code)
assert _bridge._device_names()[code] == "foo"
assert torch.device("foo", 0).type == _bridge._device_name(code)
for p, ok in expected_paths().items():  # every path still views, cpu named cpu
    if ok:
        assert view_fields(getattr(bridge, "view_" + p)(t)) == torch_answer(t)
print("OK")
"""


@pytest.mark.parametrize("before", [True, False], ids=["after-first-view", "before-first-view"])
def test_privateuse1_rename_is_seen(before):
    """A privateuse1 tensor cannot be made on this CPU-only build, so the name lookup
    every view's ``device_type`` goes through is checked against torch's own name."""
    assert run_ok(RENAME.format(before=before)).startswith("OK")


def test_other_tables_are_torchs_own():
    """The cached tables that cannot change: dtype codes (every dtype viewed reports
    torch's dtype, checked by the parity suite) and device names, which equal torch's."""
    bridge.available_paths()
    names = _bridge._device_names()
    for member, value in torch._C._autograd.DeviceType.__members__.items():
        assert int(value) in names, member
    assert names[int(torch._C._autograd.DeviceType.CPU)] == "cpu"
    assert names[int(torch._C._autograd.DeviceType.Meta)] == "meta"


# --- device types ----------------------------------------------------------------------------
def test_every_device_type_torch_names_is_known():
    bridge.available_paths()
    names = _bridge._device_names()
    want = {}
    for member, value in torch._C._autograd.DeviceType.__members__.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want[int(value)] = torch.device(member.lower()).type
        except RuntimeError:  # torch.device does not parse it ("metal"): c10's own name
            want[int(value)] = member.lower()
    want[int(torch._C._autograd.DeviceType.PrivateUse1)] = \
        torch._C._get_privateuse1_backend_name()
    assert names == want
    devices, pu1 = _resolve.device_types(torch)  # the stable ABI's codes agree with it
    assert devices == want and pu1 == int(torch._C._autograd.DeviceType.PrivateUse1)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_device_types_made_here(device, path, view_on):
    t = torch.arange(6.0, device=device).reshape(2, 3)
    if device == "meta":
        refused_on_every_entry(t, path, r"^a meta tensor has no data")
    else:
        v = view_on(t)
        assert v.device_type == "cpu" and view_fields(v) == torch_answer(t)
        imported = torch.from_dlpack(t.__dlpack__())  # a DLPack import: kDLCPU
        assert view_on(imported).device_type == imported.device.type == "cpu"


def test_a_code_torch_does_not_name_is_refused_as_unknown(hidden):
    """The one refusal the table leaves: a device type code torch names not. Without
    torch's enum and the meta code's symbol, meta tensors carry such a code."""
    hidden(_resolve.HIDE_DEVICE_ENUM, "aoti_torch_device_type_meta")
    assert int(torch._C._autograd.DeviceType.Meta) not in _bridge._device_names()
    for p in paths_here():
        with pytest.raises(BufferError, match=r"^device type code \d+ is unknown to the "
                                              r"reader: torch names no such"):
            VIEWS[p](torch.empty(2, device="meta"))
        assert VIEWS[p](torch.ones(2)).device_type == "cpu"
