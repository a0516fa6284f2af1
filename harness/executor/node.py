"""What a unit says about the machine it ran on: host, Ray node (when on Ray), hardware."""

from __future__ import annotations

import socket
import sys
from typing import Any

from harness.manifest import hardware


def node_info() -> dict[str, Any]:
    """This machine: its host name, address and hardware; on a Ray worker also the Ray node id."""
    info: dict[str, Any] = {"hostname": socket.gethostname(), "ip": _ip(), "hardware": hardware()}
    ray = sys.modules.get("ray")  # never imported here: only a process that runs on Ray has it loaded
    if ray is not None and ray.is_initialized():
        info["ray_node_id"] = ray.get_runtime_context().get_node_id()
    return info


def _ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def node_name(node: dict[str, Any]) -> str:
    """A short name for reports: host, and the Ray node id's first characters when there is one."""
    ray_id = node.get("ray_node_id")
    return f"{node.get('hostname', '?')}" + (f" (ray node {ray_id[:8]})" if ray_id else "")
