"""This machine's own network addresses, and the addresses students type to reach the classroom server.

Students on a school network usually reach the teacher's laptop by its IP address (its host name often
does not resolve there), so the launcher allows every address of this machine as a websocket origin and
prints the address by IP first.  Pure standard library: `ip -j addr` when iproute2 is there, otherwise
the SIOCGIFADDR ioctl for IPv4 and /proc/net/if_inet6 for IPv6.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import shutil
import socket
import struct
import subprocess
from pathlib import Path

SIOCGIFADDR = 0x8915  # Linux: an interface's (primary) IPv4 address


def usable(address: str) -> bool:
    """An address a student's browser can use: not loopback, not link-local (a browser cannot open a
    link-local IPv6 URL, which needs a zone such as %eth0), not unspecified or multicast."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast)


def from_ip_json(text: str) -> list[str]:
    """Every address in the output of `ip -j addr`, IPv4 first, in interface order."""
    found = []
    for interface in json.loads(text or "[]"):
        for info in interface.get("addr_info", []):
            if info.get("family") in ("inet", "inet6") and info.get("local"):
                found.append((info["family"] != "inet", info["local"]))
    return [address for _, address in sorted(found, key=lambda f: f[0])]


def _ipv4_by_ioctl() -> list[str]:
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without an IPv4 address
                continue
            found.append(socket.inet_ntoa(packed[20:24]))
    return found


def _ipv6_from_proc(path: Path = Path("/proc/net/if_inet6")) -> list[str]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        hexaddr = line.split()[0]
        found.append(str(ipaddress.IPv6Address(bytes.fromhex(hexaddr))))
    return found


def raw_addresses() -> list[str]:
    """Every address of every interface of this machine (loopback included)."""
    ip = shutil.which("ip")
    if ip:
        try:
            out = subprocess.run([ip, "-j", "addr"], capture_output=True, text=True, timeout=5, check=True)
            return from_ip_json(out.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    return _ipv4_by_ioctl() + _ipv6_from_proc()


def own_addresses(found: list[str] | None = None) -> list[str]:
    """This machine's non-loopback addresses a browser can use, IPv4 first, without repeats.

    `found` replaces the look-up (tests pass their own list)."""
    result: list[str] = []
    for address in raw_addresses() if found is None else found:
        if address not in result and (usable(address) or not _is_ip(address)):
            result.append(address)
    return result


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_for_url(address: str) -> str:
    """An address as it stands in a URL or an Origin: IPv6 in brackets."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


EVERY_IPV4, EVERY_ADDRESS = "0.0.0.0", "::"


def loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return False


def listened_on(listen: str, addresses: list[str]) -> list[str]:
    """Which of this machine's `addresses` a server bound to `listen` answers on: all of them for "::",
    the IPv4 ones for 0.0.0.0, none for a loopback address, else `listen` itself."""
    if listen in (EVERY_ADDRESS, ""):
        return list(addresses)
    if listen == EVERY_IPV4:
        return [a for a in addresses if not _is_ip(a) or ipaddress.ip_address(a).version == 4]
    if loopback(listen):
        return []
    return [listen]


def student_urls(port: int, addresses: list[str], hostname: str, listen: str = EVERY_ADDRESS) -> list[str]:
    """The addresses students can open, by IP first, then by host name (only when the server answers on
    every address: the name may resolve to any of them); localhost alone when it answers on loopback only."""
    hosts = [host_for_url(a) for a in listened_on(listen, addresses)]
    if hostname and listen in (EVERY_ADDRESS, EVERY_IPV4, ""):
        hosts.append(hostname)
    return [f"http://{h}:{port}/" for h in hosts] or [f"http://localhost:{port}/"]


def own_page_host(listen: str) -> str:
    """The host the teacher opens their own pages by, on this machine."""
    every = listen in (EVERY_ADDRESS, EVERY_IPV4, "")
    return "localhost" if every or loopback(listen) else host_for_url(listen)
