#!/usr/bin/env python3
"""802.1Q-tagged test frames for the namespace tests, through AF_PACKET (this kernel has no
802.1Q devices): the tag is written into the frame by hand.

    vlan_frames.py send IFACE --vlan V [--vlan V ...] [--count N] [--interval-ms MS] [--src MAC] [--dst MAC]
    vlan_frames.py stream IFACE --to VLAN=MAC [--to ...] --interval-ms MS --seconds S [--size B]
    vlan_frames.py sink IFACE --as VLAN=MAC [--as ...] --log-prefix P --seconds S [--size B]

send: N frames per VLAN (VLAN 0: untagged), round robin, destination broadcast unless --dst.
stream: one frame per VLAN every MS, to that VLAN's MAC, for S seconds (or until SIGINT).
sink: receives (promiscuous) the frames of each VLAN addressed to its MAC and writes one line
per frame to P-VLAN in the format of `ping -D` (`[t] B bytes from vlanV: icmp_seq=N`, ` DUP!`
for a sequence number seen before), so that scripts/capture.sh's `flowing` and
scripts/eaps_events.py read them as they read pings; every 10 ms it sends a broadcast frame
from each VLAN's MAC in that VLAN, so that the bridges learn where the MAC is.

Frames: EtherType 0x88b5 (IEEE local experimental), payload "spotagg VLAN-test", the VLAN and
a sequence number (big endian, 16 + 32 bits), padded to --size bytes on the wire (64 by
default, with the 4-byte FCS that veth does not carry).
"""
import argparse
import signal
import socket
import struct
import sys
import threading
import time

ETH_P_LOCAL = 0x88B5
MAGIC = b"spotagg VLAN-test"


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def frame(dst, src, vlan, seq, size=64):
    payload = MAGIC + struct.pack(">HI", vlan, seq)
    if vlan:
        head = dst + src + struct.pack(">HHH", 0x8100, vlan, ETH_P_LOCAL)
    else:
        head = dst + src + struct.pack(">H", ETH_P_LOCAL)
    f = head + payload
    return f + bytes(max(0, size - 4 - len(f)))


def pairs(items):
    out = []
    for it in items:
        v, m = it.split("=", 1)
        out.append((int(v), mac(m)))
    return out


def stopper():
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def stream(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    src = mac(a.src)
    to = pairs(a.to)
    stop = stopper()
    t0 = time.monotonic()
    seq = 0
    while not stop.is_set() and time.monotonic() - t0 < a.seconds:
        for v, dst in to:
            s.send(frame(dst, src, v, seq, a.size))
        seq += 1
        nxt = t0 + seq * a.interval_ms / 1000
        time.sleep(max(0.0, nxt - time.monotonic()))
    print(f"stream: sent {seq} frames on each of VLANs {[v for v, _ in to]}", file=sys.stderr)


def sink(a):
    ETH_P_ALL = 0x0003
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((a.iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.settimeout(0.05)
    mine = pairs(a.as_)
    macs = {v: m for v, m in mine}
    logs = {v: open(f"{a.log_prefix}-{v}", "w", buffering=1) for v, _ in mine}
    seen = {v: set() for v, _ in mine}
    stop = stopper()

    def hello():
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx.bind((a.iface, 0))
        while not stop.is_set():
            for v, m in mine:
                tx.send(frame(b"\xff" * 6, m, v, 0xFFFFFFFF, a.size))
            stop.wait(0.01)

    threading.Thread(target=hello, daemon=True).start()
    t0 = time.monotonic()
    while not stop.is_set() and time.monotonic() - t0 < a.seconds:
        try:
            data, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        # The kernel hands the 802.1Q tag over apart (PACKET_AUXDATA): the VLAN is read from
        # the payload, after the EtherType where the tag was taken out.
        i = data.find(MAGIC)
        if i < 0 or i + len(MAGIC) + 6 > len(data):
            continue
        v, seq = struct.unpack(">HI", data[i + len(MAGIC):i + len(MAGIC) + 6])
        if v not in macs or data[:6] != macs[v] or seq == 0xFFFFFFFF:
            continue
        dup = " DUP!" if seq in seen[v] else ""
        seen[v].add(seq)
        logs[v].write(f"[{time.time():.6f}] {len(data)} bytes from vlan{v}: icmp_seq={seq}{dup}\n")


def send(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    dst, src = mac(a.dst), mac(a.src)
    for seq in range(a.count):
        for v in a.vlan:
            s.send(frame(dst, src, v, seq))
        if a.interval_ms:
            time.sleep(a.interval_ms / 1000)
    print(f"sent {a.count} frames on each of VLANs {a.vlan}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("iface")
    s.add_argument("--vlan", type=int, action="append", required=True)
    s.add_argument("--count", type=int, default=10)
    s.add_argument("--interval-ms", type=float, default=0.0)
    s.add_argument("--src", default="02:78:00:00:01:01")
    s.add_argument("--dst", default="ff:ff:ff:ff:ff:ff")
    s = sub.add_parser("stream")
    s.add_argument("iface")
    s.add_argument("--to", action="append", required=True, help="VLAN=MAC")
    s.add_argument("--interval-ms", type=float, default=2.0)
    s.add_argument("--seconds", type=float, default=600.0)
    s.add_argument("--size", type=int, default=64)
    s.add_argument("--src", default="02:78:00:00:01:01")
    s = sub.add_parser("sink")
    s.add_argument("iface")
    s.add_argument("--as", dest="as_", action="append", required=True, help="VLAN=MAC")
    s.add_argument("--log-prefix", required=True)
    s.add_argument("--seconds", type=float, default=600.0)
    s.add_argument("--size", type=int, default=64)
    a = ap.parse_args()
    {"send": send, "stream": stream, "sink": sink}[a.cmd](a)


if __name__ == "__main__":
    main()
