#!/usr/bin/env python3
"""802.1Q-tagged test frames for the namespace tests, through AF_PACKET (this kernel has no
802.1Q devices): the tag is written into the frame by hand.

    vlan_frames.py send IFACE --vlan V [--vlan V ...] [--count N] [--interval-ms MS] [--src MAC] [--dst MAC]

sends N frames per VLAN (VLAN 0: untagged), round robin, EtherType 0x88b5 (IEEE local
experimental), payload "spotagg VLAN-test" and the VLAN and a sequence number (big endian,
16 + 32 bits), padded to 64 bytes on the wire. Destination broadcast unless --dst.
"""
import argparse
import socket
import struct
import sys
import time

ETH_P_LOCAL = 0x88B5
MAGIC = b"spotagg VLAN-test"


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def frame(dst, src, vlan, seq):
    payload = MAGIC + struct.pack(">HI", vlan, seq)
    if vlan:
        head = dst + src + struct.pack(">HHH", 0x8100, vlan, ETH_P_LOCAL)
    else:
        head = dst + src + struct.pack(">H", ETH_P_LOCAL)
    f = head + payload
    return f + bytes(max(0, 60 - len(f)))


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
    a = ap.parse_args()
    if a.cmd == "send":
        send(a)


if __name__ == "__main__":
    main()
