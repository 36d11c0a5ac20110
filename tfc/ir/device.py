"""Device names ("/job:ps/task:0/device:CPU:0"): parsing, merging of nested scopes, printing."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_FIELD = re.compile(r"^(job|replica|task|device|cpu|gpu|CPU|GPU):?(.*)$")


@dataclass(frozen=True)
class DeviceSpec:
    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def from_string(cls, spec: str | None) -> DeviceSpec:
        """Parse a full or partial device name; raises ValueError naming the bad part."""
        if not spec:
            return cls()
        fields: dict = {}
        for part in spec.strip().split("/"):
            if not part:
                continue
            m = _FIELD.match(part)
            if m is None:
                raise ValueError(f"Unknown attribute '{part}' in device specification '{spec}'")
            key, value = m.group(1), m.group(2)
            try:
                if key == "job":
                    fields["job"] = value
                elif key in ("replica", "task"):
                    fields[key] = int(value)
                elif key == "device":
                    dtype, _, index = value.partition(":")
                    fields["device_type"] = dtype.upper()
                    fields["device_index"] = None if index in ("", "*") else int(index)
                else:  # legacy "/cpu:0", "/gpu:1"
                    fields["device_type"] = key.upper()
                    fields["device_index"] = None if value in ("", "*") else int(value)
            except ValueError:
                raise ValueError(
                    f"Bad value in '{part}' of device specification '{spec}'"
                ) from None
        return cls(**fields)

    def merged_onto(self, outer: DeviceSpec) -> DeviceSpec:
        """This (inner) spec with the fields it leaves open taken from the enclosing scope."""
        return replace(
            outer,
            **{k: v for k, v in self.__dict__.items() if v is not None},
        )

    def to_string(self) -> str:
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else str(self.device_index)
            out += f"/device:{self.device_type}:{index}"
        return out


def merge_device(outer: str, inner: str | None) -> str:
    """The device string an op gets inside `tf.device(inner)` nested in a scope of `outer`."""
    if inner is None:
        return ""
    return DeviceSpec.from_string(inner).merged_onto(DeviceSpec.from_string(outer)).to_string()
