#!/usr/bin/env python3
"""An EAPS master written apart from spotagg: RFC 3619 §2, with the PDU as Allied Telesis EPSR
sends it (EDP header, EAPS TLV, null TLV `99 00 00 04`, EDP length 84; docs/eaps.md §1), over
AF_PACKET. It uses nothing of spotagg's: a second implementation to test `spotagg eaps` against.

    eaps_master.py master --bridge br0 --primary p12 --secondary p14 --vlan 10 [--hello-ms 10]
                          [--fail-ms 300] [--status FILE]
    eaps_master.py send   IFACE KIND [--vlan 10]     one PDU: health, bad-checksum, truncated, v2
    eaps_master.py probe  IFACE COUNT [--every-ms 20] broadcast probes (EtherType 0x88b5, a seq)
    eaps_master.py count  IFACE SECONDS               prints `probes <received> <distinct>`

The master blocks its secondary by taking it out of the bridge (`ip link set P nomaster`) and
opens it by putting it back, as the Linux daemon does; it flushes the bridge's learned entries
on every change. States: Init, Complete, Failed. HEALTH carries the master's state (1 Complete,
2 Failed), out of the primary every hello; its own HEALTH back on the secondary: Complete,
secondary blocked, RING-UP-FLUSH-FDB out of both ports; LINK-DOWN, a local link down, or no
HEALTH back for the fail period: Failed, secondary opened, RING-DOWN-FLUSH-FDB out of both ports.
SIGSTOP stalls it (a silent master); the status file says the state after every change.
"""
import argparse
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

DST = bytes.fromhex("00e02b000004")
ETH_P_ALL = 0x0003
HEALTH, RING_UP, RING_DOWN, LINK_DOWN = 5, 6, 7, 8
IDLE, COMPLETE, FAILED = 0, 1, 2
PROBE_TYPE = 0x88B5


def csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def pdu(src: bytes, vlan: int, kind: int, state: int, hello: int, fail: int, seq: int, eaps_version=1) -> bytes:
    """A tagged EAPS frame as Allied Telesis EPSR sends it (110 bytes, no FCS)."""
    tlv = struct.pack("!BBHBBHI6sHHBBH", 0x99, 0x0B, 64, eaps_version, kind, vlan, 0, src, hello, fail, state, 0, seq)
    tlv += b"\0" * (64 - len(tlv))
    edp = struct.pack("!BBHHHH6s", 1, 0, 84, 0, 0, 0, src) + tlv + bytes([0x99, 0, 0, 4])
    edp = edp[:4] + struct.pack("!H", csum(edp)) + edp[6:]
    llc = bytes.fromhex("aaaa0300e02b00bb") + edp
    tci = (7 << 13) | vlan
    return DST + src + struct.pack("!HHH", 0x8100, tci, len(llc)) + llc


def parse(frame: bytes):
    """(kind, state, system MAC, control VLAN) of a well-formed PDU, else None. The kernel hands
    AF_PACKET the frame without its tag: the VID comes from the EAPS TLV."""
    if frame[:6] != DST or len(frame) < 14:
        return None
    off = 12
    if frame[12:14] == b"\x81\x00":
        off = 16
    llc = frame[off + 2 :]
    if llc[:8] != bytes.fromhex("aaaa0300e02b00bb"):
        return None
    edp = llc[8:]
    if len(edp) < 20:
        return None
    n = struct.unpack("!H", edp[2:4])[0]
    if n < 20 or n > len(edp) or csum(edp[:n]) != 0:
        return None
    at = 16
    while at + 4 <= n:
        if edp[at] != 0x99:
            return None
        t, ln = edp[at + 1], struct.unpack("!H", edp[at + 2 : at + 4])[0]
        if ln < 4 or at + ln > n:
            return None
        if t == 0:
            return None
        if t == 0x0B and ln >= 64:
            tlv = edp[at : at + 64]
            if tlv[4] != 1:
                return None
            return tlv[5], tlv[22], tlv[12:18], struct.unpack("!H", tlv[6:8])[0]
        at += ln
    return None


def open_port(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    s.setblocking(False)
    return s


def mac_of(ifname: str) -> bytes:
    with open(f"/sys/class/net/{ifname}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def link_up(ifname: str) -> bool:
    with open(f"/sys/class/net/{ifname}/operstate") as f:
        return f.read().strip() == "up"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Master:
    def __init__(self, a):
        self.a = a
        self.mac = mac_of(a.bridge)
        self.ports = {"p": open_port(a.primary), "s": open_port(a.secondary)}
        self.name = {"p": a.primary, "s": a.secondary}
        self.up = {k: link_up(v) for k, v in self.name.items()}
        self.state = IDLE
        self.seq = 0
        self.fail_at = 0.0
        self.next_hello = 0.0
        self.counts = {"health_sent": 0, "health_back": 0, "ring_up": 0, "ring_down": 0, "link_down_rx": 0}
        sh("bridge", "fdb", "add", "00:e0:2b:00:00:04", "dev", a.bridge, "self", "local")

    def log(self, msg: str) -> None:
        print(f"{time.monotonic():.6f} eaps_master: {msg}", flush=True)
        if self.a.status:
            tmp = self.a.status + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"state": ["Idle", "Complete", "Failed"][self.state] if self.state else "Init", **self.counts}, f)
            os.replace(tmp, self.a.status)

    def send(self, port: str, kind: int, state: int) -> None:
        if not self.up[port]:
            return
        hello, fail = (self.a.hello_ms, self.a.fail_ms) if kind == HEALTH else (0, 0)
        seq = self.seq if kind == HEALTH else 0
        try:
            self.ports[port].send(pdu(self.mac, self.a.vlan, kind, state, hello, fail, seq))
        except OSError:
            pass

    def secondary(self, open_: bool) -> None:
        if open_:
            sh("ip", "link", "set", self.a.secondary, "master", self.a.bridge)
            sh("bridge", "link", "set", "dev", self.a.secondary, "state", "3")
        else:
            sh("ip", "link", "set", self.a.secondary, "nomaster")
        sh("bridge", "fdb", "flush", "dev", self.a.bridge, "dynamic")
        sh("bridge", "fdb", "flush", "dev", self.a.primary, "dynamic")

    def complete(self) -> None:
        self.secondary(False)
        self.state = COMPLETE
        self.counts["ring_up"] += 1
        for p in ("p", "s"):
            self.send(p, RING_UP, COMPLETE)
        self.log("Complete: secondary blocked, RING-UP-FLUSH-FDB sent")

    def failed(self, why: str) -> None:
        if self.state == FAILED:
            return
        self.state = FAILED
        if self.up["s"]:
            self.secondary(True)
        self.counts["ring_down"] += 1
        for p in ("p", "s"):
            self.send(p, RING_DOWN, FAILED)
        self.log(f"Failed ({why}): secondary open, RING-DOWN-FLUSH-FDB sent")

    def run(self) -> None:
        sh("bridge", "link", "set", "dev", self.a.primary, "state", "3")
        self.secondary(False)
        self.state = IDLE
        now = time.monotonic()
        self.fail_at = now + self.a.fail_ms / 1e3
        self.log("Init: secondary blocked")
        while True:
            now = time.monotonic()
            if now >= self.next_hello:
                self.seq = (self.seq + 1) & 0xFFFF
                self.send("p", HEALTH, self.state)
                self.counts["health_sent"] += 1
                self.next_hello = now + self.a.hello_ms / 1e3
            if self.state != FAILED and now >= self.fail_at:
                self.failed("fail timer")
            for k, n in self.name.items():
                u = link_up(n)
                if u != self.up[k]:
                    self.up[k] = u
                    self.log(f"{n} link {'up' if u else 'down'}")
                    if not u:
                        self.failed(f"{n} down")
                    elif k == "s" and self.state == FAILED:
                        # A secondary that comes back stays blocked until HEALTH returns.
                        self.secondary(False)
            r, _, _ = select.select(list(self.ports.values()), [], [], min(0.002, max(0.0, self.next_hello - now)))
            for k, s in self.ports.items():
                if s not in r:
                    continue
                while True:
                    try:
                        frame, addr = s.recvfrom(2048)
                    except BlockingIOError:
                        break
                    if addr[2] == socket.PACKET_OUTGOING:
                        continue
                    p = parse(frame)
                    if p is None or p[3] != self.a.vlan:
                        continue
                    kind, _state, mac, _vlan = p
                    if kind == HEALTH and mac == self.mac and k == "s":
                        self.counts["health_back"] += 1
                        self.fail_at = time.monotonic() + self.a.fail_ms / 1e3
                        if self.state != COMPLETE:
                            self.complete()
                    elif kind == LINK_DOWN:
                        self.counts["link_down_rx"] += 1
                        self.failed("LINK-DOWN")


def send_one(a) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    src = mac_of(a.iface)
    kind = a.kind
    if kind == "health":
        f = pdu(src, a.vlan, HEALTH, COMPLETE, 1, 2, 7)
    elif kind == "bad-checksum":
        f = bytearray(pdu(src, a.vlan, HEALTH, COMPLETE, 1, 2, 7))
        f[70] ^= 1
        f = bytes(f)
    elif kind == "truncated":
        f = pdu(src, a.vlan, HEALTH, COMPLETE, 1, 2, 7)[:60]
    elif kind == "v2":
        f = pdu(src, a.vlan, HEALTH, COMPLETE, 1, 2, 7, eaps_version=2)
    else:
        sys.exit(f"unknown kind {kind}")
    s.send(f)


def probe(a) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    src = mac_of(a.iface)
    for i in range(a.count):
        s.send(b"\xff" * 6 + src + struct.pack("!HI", PROBE_TYPE, i) + b"\0" * 46)
        time.sleep(a.every_ms / 1e3)


def count(a) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(PROBE_TYPE))
    s.bind((a.iface, 0))
    s.settimeout(0.05)
    seen = []
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        try:
            frame, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        if addr[2] != socket.PACKET_OUTGOING and frame[12:14] == struct.pack("!H", PROBE_TYPE):
            seen.append(struct.unpack("!I", frame[14:18])[0])
    print(f"probes {len(seen)} {len(set(seen))}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("master")
    m.add_argument("--bridge", required=True)
    m.add_argument("--primary", required=True)
    m.add_argument("--secondary", required=True)
    m.add_argument("--vlan", type=int, default=10)
    m.add_argument("--hello-ms", type=int, default=10)
    m.add_argument("--fail-ms", type=int, default=300)
    m.add_argument("--status")
    s = sub.add_parser("send")
    s.add_argument("iface")
    s.add_argument("kind")
    s.add_argument("--vlan", type=int, default=10)
    p = sub.add_parser("probe")
    p.add_argument("iface")
    p.add_argument("count", type=int)
    p.add_argument("--every-ms", type=int, default=20)
    c = sub.add_parser("count")
    c.add_argument("iface")
    c.add_argument("seconds", type=float)
    a = ap.parse_args()
    if a.cmd == "master":
        Master(a).run()
    elif a.cmd == "send":
        send_one(a)
    elif a.cmd == "probe":
        probe(a)
    else:
        count(a)


if __name__ == "__main__":
    main()
