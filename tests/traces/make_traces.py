#!/usr/bin/env python3
"""Independent trace generator for the spotagg switch.

Written from shared/design.md and docs/switch.md ONLY (no Rust source was read), so that the
reference switch and the hardware models can be checked against an independent reading of the
specification.

For every scenario NAME it writes into --out:
  NAME.toml            the job (switch MAC/IP, payload size, slots, vlan and vlan_priority for a
                       tagged job, one [[worker]] per rank)
  NAME.in.pcap         the frames sent to the switch
  NAME.expected.pcap   every frame the switch must emit, in order
  NAME.counters.json   the counters the switch must show afterwards

Standard library only.  Deterministic for a given --seed.

    python3 tests/traces/make_traces.py --out DIR [--seed S] [--only NAME ...] [--check]
    python3 tests/traces/make_traces.py --compare EXPECTED.pcap ACTUAL.pcap
"""

import argparse
import heapq
import json
import os
import random
import struct
import sys

DEFAULT_SEED = 20240517

BCAST = b"\xff" * 6
ETH_IPV4 = 0x0800
ETH_ARP = 0x0806
ETH_IPV6 = 0x86DD
ETH_VLAN = 0x8100      # 802.1Q C-tag TPID
ETH_QINQ = 0x88A8      # 802.1ad S-tag TPID
ETH_VLAN_OLD = 0x9100  # the pre-standard QinQ TPID

SIZE_CODES = {128: 0, 256: 1, 512: 2, 1024: 3}

DROP_REASONS = [
    "truncated", "wrong_dst_mac", "wrong_vlan", "not_ipv4_udp", "ip_options", "ip_checksum", "bad_length",
    "ip_fragment", "wrong_dst_ip", "bad_port", "unknown_source", "bad_msg_type", "bad_size",
    "bad_slot", "wrong_src_port", "stale_session", "lane_mismatch",
]
COUNTERS = [
    "frames_in", "frames_out", "contributions", "duplicates", "results_multicast",
    "results_retransmitted", "arp_replies", "icmp_replies",
] + DROP_REASONS + ["ip_checksum_zero"]

# Verdicts returned by the model for one received frame (besides the drop reasons).
V_CONTRIB = "contribution"
V_DUP = "duplicate"
V_SESSION = "session"
V_SESSION_DUP = "session_duplicate"
V_ARP = "arp"
V_ICMP = "icmp"
V_PARENT = "parent_result"
V_PARENT_STALE = "parent_result_stale"


# --------------------------------------------------------------------------------------------
# small helpers

def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def mac_str(b):
    return ":".join("%02x" % x for x in b)


def ipa(s):
    return bytes(int(x) for x in s.split("."))


def ip_str(b):
    return ".".join(str(x) for x in b)


def s32(x):
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def s16(x):
    x &= 0xFFFF
    return x - 0x10000 if x & 0x8000 else x


def s8(x):
    x &= 0xFF
    return x - 256 if x & 0x80 else x


def u16(b, off):
    return (b[off] << 8) | b[off + 1]


def fold(x):
    while x >> 16:
        x = (x & 0xFFFF) + (x >> 16)
    return x


def ones_sum(data):
    """16-bit one's-complement sum (RFC 1071), odd length padded with a zero byte."""
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    return fold(total)


def inet_csum(data):
    return ~ones_sum(data) & 0xFFFF


def vlan_tag(tci, tpid=ETH_VLAN):
    return struct.pack("!HH", tpid & 0xFFFF, tci & 0xFFFF)


def insert_tag(fr, tag):
    """The frame with the 4 bytes `tag` inserted after byte 12 (after the MAC addresses)."""
    return bytes(fr[:12]) + tag + bytes(fr[12:])


def untag(fr):
    """bytes 0..12 followed by bytes 16..L (docs/switch.md §1 step 3.3)."""
    return bytes(fr[:12]) + bytes(fr[16:])


# --------------------------------------------------------------------------------------------
# the job

class Job:
    def __init__(self, n, payload=256, slots=16, switch_mac="02:00:5a:00:00:01",
                 switch_ip="192.0.2.1", workers=None, vlan=None, vlan_priority=0, parent=None,
                 tree_workers=None, worker_port=0xBEE0, worker_ports=1, zero_ip_checksum=False,
                 lanes16=False):
        assert 1 <= n <= 32
        assert vlan is None or 1 <= vlan <= 4094, vlan
        assert 0 <= vlan_priority <= 7 and (vlan is not None or vlan_priority == 0)
        self.vlan = vlan
        self.vlan_priority = vlan_priority
        # TCI of every frame a tagged job's switch sends: PCP = the job's priority, DEI 0
        self.tci = None if vlan is None else (vlan_priority << 13) | vlan
        assert payload in SIZE_CODES
        self.n = n
        self.payload = payload
        self.k = payload // 4
        self.c = SIZE_CODES[payload]
        self.slots = slots
        self.worker_port = worker_port
        # docs/switch.md §1 7.5: the ports worker_port .. worker_port + worker_ports; §1 6.4: Z
        assert 1 <= worker_ports and worker_port + worker_ports <= 0x10000
        self.worker_ports = worker_ports
        self.zero_ip_checksum = zero_ip_checksum
        # docs/switch.md §9: H, contributions of 16-bit lanes at 0xBEF0..0xBEFF
        self.lanes16 = lanes16
        self.switch_mac_s = switch_mac
        self.switch_ip_s = switch_ip
        self.sm = mac(switch_mac)
        self.si = ipa(switch_ip)
        if workers is None:
            workers = [("192.0.2.%d" % (10 + r), "02:00:5a:00:01:%02x" % r) for r in range(n)]
        assert len(workers) == n
        self.workers_s = workers
        self.ip = [ipa(w[0]) for w in workers]
        self.mac = [mac(w[1]) for w in workers]
        assert len(set(self.ip)) == n
        # docs/switch.md §6: (ip, mac, port, rank) of the parent switch, or None
        self.parent_s = parent
        self.tree_workers = tree_workers
        if parent is not None:
            self.pi, self.pm, self.pp = ipa(parent[0]), mac(parent[1]), parent[2]
            assert self.pi not in self.ip and self.pi != self.si

    def toml(self):
        out = [
            'switch_mac = "%s"' % self.switch_mac_s,
            'switch_ip = "%s"' % self.switch_ip_s,
            "payload_bytes = %d" % self.payload,
            "slots = %d" % self.slots,
            "worker_port = %d" % self.worker_port,
        ]
        if self.worker_ports != 1:
            out.append("worker_ports = %d" % self.worker_ports)
        if self.zero_ip_checksum:
            out.append("zero_ip_checksum = true")
        if self.lanes16:
            out.append("lanes16 = true")
        if self.vlan is not None:
            out += ["vlan = %d" % self.vlan, "vlan_priority = %d" % self.vlan_priority]
        if self.tree_workers is not None:
            out.append("tree_workers = %d" % self.tree_workers)
        for ip_s, mac_s in self.workers_s:
            out += ["", "[[worker]]", 'ip = "%s"' % ip_s, 'mac = "%s"' % mac_s]
        if self.parent_s is not None:
            ip_s, mac_s, port, rank = self.parent_s
            out += ["", "[parent]", 'ip = "%s"' % ip_s, 'mac = "%s"' % mac_s, "port = %d" % port,
                    "rank = %d" % rank]
        return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# frame builders

def ether(dst, src, etype, body):
    return dst + src + struct.pack("!H", etype) + body


def ipv4(src, dst, proto, l4, *, tos=0, ident=0, flags_frag=0, ttl=64, version=4, ihl=None,
         options=b"", total_length=None, csum=None, csum_delta=0):
    hlen = 20 + len(options)
    if ihl is None:
        ihl = hlen // 4
    t = hlen + len(l4) if total_length is None else total_length
    h = bytearray(struct.pack("!BBHHHBBH4s4s", ((version & 15) << 4) | (ihl & 15), tos,
                              t & 0xFFFF, ident & 0xFFFF, flags_frag & 0xFFFF, ttl & 0xFF,
                              proto & 0xFF, 0, src, dst) + options)
    c = inet_csum(h) if csum is None else csum
    c = (c + csum_delta) & 0xFFFF
    h[10:12] = struct.pack("!H", c)
    return bytes(h) + l4


def udp(sport, dport, payload, *, length=None, csum=0):
    ln = 8 + len(payload) if length is None else length
    return struct.pack("!HHHH", sport & 0xFFFF, dport & 0xFFFF, ln & 0xFFFF, csum & 0xFFFF) + payload


def pack_values(values):
    return struct.pack("!%di" % len(values), *[s32(v) for v in values])


def swml(msg_type, size, job_number, tsi, pool_index, e0, e1, values, unused=0):
    b0 = ((msg_type & 15) << 4) | ((unused & 1) << 3) | (size & 7)
    return (struct.pack("!BBIHbb", b0, job_number & 0xFF, tsi & 0xFFFFFFFF, pool_index & 0xFFFF,
                        s8(e0), s8(e1)) + pack_values(values))


def contrib_fields(job, rank, slot, setbit, values, e0=0, e1=0, tsi=0, job_number=0, sport=None,
                   dport=0xBEE0):
    """Default field set of a valid contribution; builders take overrides on a copy."""
    return dict(
        eth_dst=job.sm, eth_src=job.mac[rank], ethertype=ETH_IPV4,
        version=4, ihl=None, tos=0, ident=0, flags_frag=0, ttl=64, proto=17, csum=None,
        csum_delta=0, src_ip=job.ip[rank], dst_ip=job.si, options=b"", total_length=None,
        sport=job.worker_port if sport is None else sport, dport=dport, udp_len=None, udp_csum=0,
        msg_type=1, unused=0, size=job.c, job_number=job_number, tsi=tsi, slot=slot,
        setbit=setbit, pool_index=None, e0=e0, e1=e1, values=list(values),
        pad=b"", truncate=None, l4_override=None, tag=None,
    )


def build_contrib(f):
    pool = f["pool_index"]
    if pool is None:
        pool = (f["setbit"] << 15) | f["slot"]
    if f["l4_override"] is not None:
        l4 = f["l4_override"]
    else:
        sw = swml(f["msg_type"], f["size"], f["job_number"], f["tsi"], pool, f["e0"], f["e1"],
                  f["values"], f["unused"])
        l4 = udp(f["sport"], f["dport"], sw, length=f["udp_len"], csum=f["udp_csum"])
    ip = ipv4(f["src_ip"], f["dst_ip"], f["proto"], l4, tos=f["tos"], ident=f["ident"],
              flags_frag=f["flags_frag"], ttl=f["ttl"], version=f["version"], ihl=f["ihl"],
              options=f["options"], total_length=f["total_length"], csum=f["csum"],
              csum_delta=f["csum_delta"])
    frame = ether(f["eth_dst"], f["eth_src"], f["ethertype"], ip) + f["pad"]
    if f.get("tag") is not None:
        frame = insert_tag(frame, f["tag"])
    if f["truncate"] is not None:
        frame = frame[:f["truncate"]]
    return frame


def contribution(job, rank, slot, setbit, values, **kw):
    base = {k: kw.pop(k) for k in ("e0", "e1", "tsi", "job_number", "sport", "dport") if k in kw}
    f = contrib_fields(job, rank, slot, setbit, values, **base)
    for k, v in kw.items():
        assert k in f, k
        f[k] = v
    return build_contrib(f)


def arp_frame(eth_dst, eth_src, *, op=1, sha=None, spa, tha=b"\x00" * 6, tpa, htype=1,
              ptype=0x0800, hlen=6, plen=4, pad=b"", truncate=None, tag=None):
    sha = eth_src if sha is None else sha
    body = struct.pack("!HHBBH", htype, ptype, hlen, plen, op) + sha + spa + tha + tpa
    frame = ether(eth_dst, eth_src, ETH_ARP, body)
    if tag is not None:
        frame = insert_tag(frame, tag)
    frame += pad
    return frame if truncate is None else frame[:truncate]


def icmp_echo_frame(eth_dst, eth_src, src_ip, dst_ip, data, *, ident=0x1234, seq=1, typ=8, code=0,
                    icmp_csum=None, pad=b"", tos=0, ip_ident=0, flags_frag=0, ttl=64,
                    total_length=None, csum_delta=0, truncate=None, tag=None):
    icmp = bytearray(struct.pack("!BBHHH", typ, code, 0, ident, seq) + data)
    c = inet_csum(icmp) if icmp_csum is None else icmp_csum
    icmp[2:4] = struct.pack("!H", c)
    ip = ipv4(src_ip, dst_ip, 1, bytes(icmp), tos=tos, ident=ip_ident, flags_frag=flags_frag,
              ttl=ttl, total_length=total_length, csum_delta=csum_delta)
    frame = ether(eth_dst, eth_src, ETH_IPV4, ip)
    if tag is not None:
        frame = insert_tag(frame, tag)
    frame += pad
    return frame if truncate is None else frame[:truncate]


# --------------------------------------------------------------------------------------------
# the model of the switch (docs/switch.md §1-§4)

class Switch:
    def __init__(self, job):
        self.job = job
        s = job.slots
        self.seen = [[0] * s for _ in range(2)]
        self.count = [[0] * s for _ in range(2)]
        self.e0 = [[0] * s for _ in range(2)]
        self.e1 = [[0] * s for _ in range(2)]
        self.vals = [[[0] * job.k for _ in range(s)] for _ in range(2)]
        self.ctr = {name: 0 for name in COUNTERS}
        self.rank_of = {ip: r for r, ip in enumerate(job.ip)}
        # §6: waiting[v][s], and the frames on the parent link (outside the counters of §4)
        self.waiting = [[False] * s for _ in range(2)]
        # §9: the lane width of each round (32 or 16), set by its first contribution
        self.lanes = [[32] * s for _ in range(2)]
        self.tree = {"partials_up": 0, "partials_resent": 0, "parent_results": 0,
                     "parent_results_stale": 0}
        # docs/switch.md §2.1: the epoch (the job's job_number, 0 here, until a session opens),
        # whether one is open, the ranks that joined epoch + 1
        self.epoch = 0
        self.open = False
        self.joined = 0

    def receive(self, f):
        """Returns (verdict, [frames out])."""
        self.zero_taken = False
        verdict, outs = self._classify(bytes(f))
        if self.job.vlan is not None:
            # §3 "Tagged jobs": every frame sent carries TCI = p << 13 | V, whatever the trigger's
            outs = [insert_tag(o, vlan_tag(self.job.tci)) for o in outs]
        if verdict in (V_PARENT, V_PARENT_STALE):
            # §6: not in frames_in; the multicast it triggers is in frames_out
            self.ctr["frames_out"] += len(outs)
            return verdict, outs
        self.ctr["frames_in"] += 1
        if verdict in DROP_REASONS:
            self.ctr[verdict] += 1
            assert not outs
        elif self.zero_taken and verdict != V_ARP:
            # §1 6.4: handled with a zero checksum, counted apart as well
            self.ctr["ip_checksum_zero"] += 1
        self.ctr["frames_out"] += len([o for o in outs if not self._is_partial(o)])
        return verdict, outs

    def _is_partial(self, o):
        return self.job.parent_s is not None and o[0:6] == self.job.pm and o[30:34] == self.job.pi

    def _classify(self, f):
        j = self.job
        L = len(f)
        # §1.1
        if L < 14:
            return "truncated", []
        # §1.2
        dst = f[0:6]
        if dst != j.sm and dst != BCAST:
            return "wrong_dst_mac", []
        # §1.3 the 802.1Q tag, tagged jobs only (an untagged job sees EtherType 0x8100 below)
        if j.vlan is not None:
            if L < 16:
                return "truncated", []
            if u16(f, 12) != ETH_VLAN or u16(f, 14) & 0x0FFF != j.vlan:
                return "wrong_vlan", []
            f = untag(f)
            L = len(f)
            if L < 14:
                return "truncated", []
        et = u16(f, 12)
        # §1.4 ARP
        if et == ETH_ARP:
            if L < 42:
                return "truncated", []
            htype, ptype, hlen, plen, op = struct.unpack_from("!HHBBH", f, 14)
            if htype != 1 or ptype != 0x0800 or hlen != 6 or plen != 4 or op != 1:
                return "not_ipv4_udp", []
            if f[38:42] != j.si:
                return "wrong_dst_ip", []
            sha, spa = f[22:28], f[28:32]
            reply = ether(sha, j.sm, ETH_ARP,
                          struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + j.sm + j.si + sha + spa)
            self.ctr["arp_replies"] += 1
            return V_ARP, [reply]
        # §1.5
        if et != ETH_IPV4:
            return "not_ipv4_udp", []
        # §1.6 IPv4
        if L < 34:
            return "truncated", []
        if f[14] >> 4 != 4:
            return "not_ipv4_udp", []
        if f[14] & 15 != 5:
            return "ip_options", []
        if ones_sum(f[14:34]) != 0xFFFF:
            # §1 6.4: a field of 0 is "not computed", taken by a job with Z
            if not (j.zero_ip_checksum and u16(f, 24) == 0):
                return "ip_checksum", []
            self.zero_taken = True
        t = u16(f, 16)
        if t < 20 or 14 + t > L:
            return "bad_length", []
        ff = u16(f, 20)
        if (ff & 0x2000) or (ff & 0x1FFF):
            return "ip_fragment", []
        if f[30:34] != j.si:
            return "wrong_dst_ip", []
        proto = f[23]
        if proto == 1:
            if t < 28:
                return "truncated", []
            if f[34] != 8 or f[35] != 0:
                return "not_ipv4_udp", []
            self.ctr["icmp_replies"] += 1
            return V_ICMP, [self._echo_reply(f, t)]
        if proto != 17:
            return "not_ipv4_udp", []
        # §1.7 UDP
        if t < 28:
            return "truncated", []
        ulen = u16(f, 38)
        if ulen != t - 20:
            return "bad_length", []
        # §9: 0xBEF0..0xBEFF (16-bit lanes) only for a job with H
        dport = u16(f, 36)
        if not (dport & 0xFFF0 == 0xBEE0 or (j.lanes16 and dport & 0xFFF0 == 0xBEF0)):
            return "bad_port", []
        r = self.rank_of.get(f[26:30])
        from_parent = j.parent_s is not None and f[26:30] == j.pi
        if r is None and not from_parent:
            return "unknown_source", []
        # §1 7.5: the port rule (frames from the parent, §6, come from its own port)
        if not from_parent and not (0 <= u16(f, 34) - j.worker_port < j.worker_ports):
            return "wrong_src_port", []
        # §1.8 SwitchML
        if ulen < 18:
            return "truncated", []
        if f[42] >> 4 not in (1, 8):
            return "bad_msg_type", []
        if f[42] & 7 != j.c:
            return "bad_size", []
        if ulen != 18 + j.payload:
            return "bad_length", []
        pool = u16(f, 48)
        s, v = pool & 0x7FFF, pool >> 15
        if s >= j.slots:
            return "bad_slot", []
        if from_parent:
            return self._parent_result(f, s, v)
        if f[42] >> 4 == 8:
            return self._session(f, r, v)
        if self.open and f[43] != self.epoch:
            return "stale_session", []
        return self._contribution(f, r, s, v)

    def _session(self, f, w, v):
        """§2.1: probe (set 0) -> current epoch to the sender; join of epoch + 1 -> counted,
        the n-th opens the session (slots cleared, reply to all); other joins -> current epoch."""
        j = self.job
        nxt = (self.epoch + 1) & 0xFF
        if v == 1 and f[43] == nxt:
            if self.joined & (1 << w):
                self.ctr["duplicates"] += 1
                return V_SESSION_DUP, []
            self.ctr["contributions"] += 1
            self.joined |= 1 << w
            if bin(self.joined).count("1") < j.n:
                return V_SESSION, []
            self.epoch, self.open, self.joined = nxt, True, 0
            s = j.slots
            self.seen = [[0] * s for _ in range(2)]
            self.count = [[0] * s for _ in range(2)]
            self.lanes = [[32] * s for _ in range(2)]
            self.ctr["results_multicast"] += j.n
            return V_SESSION, self._session_replies(f, range(j.n))
        self.ctr["duplicates"] += 1
        self.ctr["results_retransmitted"] += 1
        return V_SESSION_DUP, self._session_replies(f, [w])

    def _session_replies(self, f, ranks):
        j = self.job
        tail = f[42:43] + bytes([self.epoch]) + f[44:50] + b"\x00" * (2 + j.payload)
        sport, dport = u16(f, 34), u16(f, 36)
        l4 = udp(dport, sport, tail, csum=0)
        return [ether(j.mac[r], j.sm, ETH_IPV4, ipv4(j.si, j.ip[r], 17, l4, tos=0, ident=0,
                                                      flags_frag=0, ttl=64)) for r in ranks]

    def _contribution(self, f, w, s, v):
        j = self.job
        bit = 1 << w
        width = 16 if u16(f, 36) & 0x10 else 32
        opening = not self.seen[v][s] & bit and self.count[v][s] == 0
        if not opening and width != self.lanes[v][s]:
            # §9: another width than the round's: dropped, nothing changes
            return "lane_mismatch", []
        if not self.seen[v][s] & bit:
            self.seen[v][s] |= bit
            self.seen[1 - v][s] &= ~bit
            first = self.count[v][s] == 0
            self.count[v][s] = (self.count[v][s] + 1) % j.n
            last = self.count[v][s] == 0
            vals = struct.unpack_from("!%di" % j.k, f, 52)
            e0, e1 = s8(f[50]), s8(f[51])
            if first:
                self.vals[v][s] = list(vals)
                self.e0[v][s], self.e1[v][s] = e0, e1
                self.lanes[v][s] = width
            else:
                acc = self.vals[v][s]
                for i in range(j.k):
                    if width == 16:
                        # each int32 word is two int16 lanes, high then low, each wrapping on
                        # its own
                        hi = s16((acc[i] >> 16) + (vals[i] >> 16))
                        lo = s16(acc[i] + vals[i])
                        acc[i] = s32((hi << 16) | (lo & 0xFFFF))
                    else:
                        acc[i] = s32(acc[i] + vals[i])
                self.e0[v][s] = max(self.e0[v][s], e0)
                self.e1[v][s] = max(self.e1[v][s], e1)
            self.ctr["contributions"] += 1
            self.waiting[v][s] = False
            if last and j.parent_s is not None:
                self.waiting[v][s] = True
                self.tree["partials_up"] += 1
                return V_CONTRIB, [self._partial(f, s, v)]
            if last:
                self.ctr["results_multicast"] += j.n
                return V_CONTRIB, self._results(f, s, v, range(j.n))
            return V_CONTRIB, []
        self.ctr["duplicates"] += 1
        if self.count[v][s] == 0 and self.waiting[v][s]:
            # §6: only the retransmission of rank 0 resends the partial upward.
            if w != 0:
                return V_DUP, []
            self.tree["partials_resent"] += 1
            return V_DUP, [self._partial(f, s, v)]
        if self.count[v][s] == 0:
            self.ctr["results_retransmitted"] += 1
            return V_DUP, self._results(f, s, v, [w])
        return V_DUP, []

    def _tail(self, f, s, v):
        return (f[42:50] + struct.pack("!bb", self.e0[v][s], self.e1[v][s])
                + pack_values(self.vals[v][s]))

    def _partial(self, f, s, v):
        """§6: the round's partial sum as one contribution to the parent (§9: a 16-bit round
        to the parent's 16-bit port)."""
        j = self.job
        pp = j.pp | 0x10 if self.lanes[v][s] == 16 else j.pp
        l4 = udp(u16(f, 36), pp, self._tail(f, s, v), csum=0)
        return ether(j.pm, j.sm, ETH_IPV4, ipv4(j.si, j.pi, 17, l4, tos=0, ident=0, flags_frag=0, ttl=64))

    def _parent_result(self, f, s, v):
        """§6: a parent result completes a waiting round: stored, multicast."""
        j = self.job
        width = 16 if u16(f, 36) & 0x10 else 32
        if not (self.waiting[v][s] and self.count[v][s] == 0 and width == self.lanes[v][s]):
            self.tree["parent_results_stale"] += 1
            return V_PARENT_STALE, []
        self.waiting[v][s] = False
        self.e0[v][s], self.e1[v][s] = s8(f[50]), s8(f[51])
        self.vals[v][s] = list(struct.unpack_from("!%di" % j.k, f, 52))
        self.tree["parent_results"] += 1
        self.ctr["results_multicast"] += j.n
        return V_PARENT, self._results(f, s, v, range(j.n), ports=(u16(f, 36), j.worker_port))

    def _results(self, f, s, v, ranks, ports=None):
        j = self.job
        tail = self._tail(f, s, v)
        sport, dport = u16(f, 34), u16(f, 36)
        l4 = udp(dport, sport, tail, csum=0) if ports is None else udp(ports[0], ports[1], tail, csum=0)
        outs = []
        for r in ranks:
            ip = ipv4(j.si, j.ip[r], 17, l4, tos=0, ident=0, flags_frag=0, ttl=64)
            outs.append(ether(j.mac[r], j.sm, ETH_IPV4, ip))
        return outs

    def _echo_reply(self, f, t):
        j = self.job
        q = f[14:14 + t]
        h = bytearray(q[:20])
        h[8] = 64
        h[10:12] = b"\x00\x00"
        h[12:16] = j.si
        h[16:20] = q[12:16]
        h[10:12] = struct.pack("!H", inet_csum(h))
        icmp = bytearray(q[20:])
        c = u16(icmp, 2)
        icmp[0] = 0
        icmp[1] = 0
        icmp[2:4] = struct.pack("!H", ~fold((~c & 0xFFFF) + 0xF7FF) & 0xFFFF)
        return ether(f[6:12], j.sm, ETH_IPV4, bytes(h) + bytes(icmp))


# --------------------------------------------------------------------------------------------
# pcap

PCAP_T0 = 1_700_000_000


def pcap_bytes(records):
    """records: list of (tick_us, frame)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for tick, fr in records:
        out.append(struct.pack("<IIII", PCAP_T0 + tick // 1_000_000, tick % 1_000_000,
                               len(fr), len(fr)))
        out.append(fr)
    return b"".join(out)


def read_pcap(path):
    with open(path, "rb") as fh:
        data = fh.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    else:
        e = ">"
    off = 24
    recs = []
    while off < len(data):
        sec, usec, incl, orig = struct.unpack_from(e + "IIII", data, off)
        off += 16
        recs.append(((sec, usec), data[off:off + incl]))
        off += incl
    return recs


# --------------------------------------------------------------------------------------------
# traffic helpers

def rand_values(rng, k, kind="mix"):
    if kind == "small":
        return [rng.randint(-1000, 1000) for _ in range(k)]
    if kind == "full":
        return [rng.randint(-2**31, 2**31 - 1) for _ in range(k)]
    # mix: mostly moderate, some extremes
    out = []
    for _ in range(k):
        x = rng.random()
        if x < 0.1:
            out.append(rng.choice([2**31 - 1, -2**31, -1, 0, 1, 2**30, -2**30]))
        elif x < 0.4:
            out.append(rng.randint(-2**31, 2**31 - 1))
        else:
            out.append(rng.randint(-2**20, 2**20))
    return out


def rand_exp(rng):
    return rng.choice([rng.randint(-128, 127), rng.randint(-20, 20), -128, 127, -1, 0])


class Trace:
    def __init__(self, job):
        self.job = job
        self.frames = []
        self.notes = []       # optional (index, label, expected verdict) for self-checks

    def add(self, frame, label=None, expect=None):
        if label is not None or expect is not None:
            self.notes.append((len(self.frames), label, expect))
        self.frames.append(bytes(frame))


def protocol_traffic(job, rng, rounds_per_slot, p_dup=0.0, slots=None, values="mix",
                     job_number=0, tsi_base=0, flavor=None):
    """Protocol-respecting contributions (a worker contributes to round i+1 of a slot only after
    round i completed), slots interleaved at random, ranks shuffled in every round, duplicates
    placed anywhere before the same worker's next contribution to the same slot (so they hit
    either an incomplete round -> silent, or a complete one -> retransmitted result)."""
    slots = list(range(job.slots)) if slots is None else slots
    per_slot = []
    for s in slots:
        seq = []
        for i in range(rounds_per_slot):
            v = i & 1
            order = list(range(job.n))
            rng.shuffle(order)
            e0s = [rand_exp(rng) for _ in range(job.n)]
            e1s = [rand_exp(rng) for _ in range(job.n)]
            for r in order:
                kw = dict(e0=e0s[r], e1=e1s[r], tsi=tsi_base + (s << 16) + i,
                          job_number=job_number, dport=0xBEE0 + ((s + r) & 15))
                if flavor:
                    kw.update(flavor(rng, r, s, i))
                seq.append((r, contribution(job, r, s, v, rand_values(rng, job.k, values), **kw)))
        # duplicates
        keyed = [(float(i), 0.0, fr) for i, (_, fr) in enumerate(seq)]
        for i, (r, fr) in enumerate(seq):
            if p_dup and rng.random() < p_dup:
                nxt = next((j for j in range(i + 1, len(seq)) if seq[j][0] == r), len(seq))
                keyed.append((rng.uniform(i + 0.01, nxt - 0.01), rng.random(), fr))
        keyed.sort(key=lambda x: (x[0], x[1]))
        per_slot.append([fr for _, _, fr in keyed])
    # interleave slots, keeping each slot's order
    out = []
    idx = [0] * len(per_slot)
    live = [i for i in range(len(per_slot)) if per_slot[i]]
    while live:
        weights = [len(per_slot[i]) - idx[i] for i in live]
        i = rng.choices(live, weights)[0]
        out.append(per_slot[i][idx[i]])
        idx[i] += 1
        if idx[i] == len(per_slot[i]):
            live.remove(i)
    return out


# --------------------------------------------------------------------------------------------
# the catalogue of bad frames (and of valid edge cases), each with the verdict the spec implies

def _ipv6_frame(job, rank):
    payload = udp(0xC000, 0xBEE0, b"\x10" + b"\x00" * 25)
    hdr = struct.pack("!IHBB16s16s", 0x60000000, len(payload), 17, 64,
                      b"\xfe\x80" + b"\x00" * 13 + bytes([rank + 1]),
                      b"\xfe\x80" + b"\x00" * 13 + b"\x01")
    return ether(job.sm, job.mac[rank], ETH_IPV6, hdr + payload)


def _csum_zero_alias(job, f):
    """A header whose correct checksum is 0x0000, sent with 0xFFFF (the other one's-complement
    zero).  It verifies under RFC 1071 (the sum over the header is 0xFFFF)."""
    f = dict(f)
    f["ident"] = 0
    probe = bytearray(build_contrib(f)[14:34])
    probe[10:12] = b"\x00\x00"
    rest = ones_sum(probe)
    f["ident"] = (0xFFFF - rest) & 0xFFFF
    hdr = build_contrib(f)[14:34]
    assert u16(hdr, 10) == 0x0000, hex(u16(hdr, 10))
    f["csum"] = 0xFFFF
    return f


def _csum_field_zero(t):
    """Checksum field 0x0000 where the correct checksum is not 0x0000."""
    f = dict(t, csum=None)
    if u16(build_contrib(f), 24) == 0:
        f["ident"] = (f["ident"] + 1) & 0xFFFF
    f["csum"] = 0
    return build_contrib(f)


def bad_catalogue(job):
    """List of (label, expected verdict, fn(tmpl_fields, rng) -> frame).  tmpl_fields is a field
    dict of a (garbage-valued) contribution from a real rank to the round in progress."""
    n, k, P, S, c = job.n, job.k, job.payload, job.slots, job.c
    sm, si = job.sm, job.si
    other_host_mac = mac("02:00:5a:00:02:63")
    other_host_ip = ipa("192.0.2.99")
    full_t = 20 + 18 + P   # IP total length of a valid contribution

    def m(**kw):
        def fn(t, rng):
            f = dict(t)
            f.update(kw)
            return build_contrib(f)
        return fn

    def arp_req(**kw):
        def fn(t, rng):
            args = dict(eth_dst=BCAST, eth_src=t["eth_src"], spa=t["src_ip"], tpa=si)
            args.update(kw)
            return arp_frame(args.pop("eth_dst"), args.pop("eth_src"), **args)
        return fn

    def ping(**kw):
        def fn(t, rng):
            args = dict(eth_dst=sm, eth_src=t["eth_src"], src_ip=t["src_ip"], dst_ip=si,
                        data=bytes(rng.randrange(256) for _ in range(12)))
            args.update(kw)
            return icmp_echo_frame(args.pop("eth_dst"), args.pop("eth_src"), args.pop("src_ip"),
                                   args.pop("dst_ip"), args.pop("data"), **args)
        return fn

    def raw(fn2):
        return lambda t, rng: fn2(t, rng)

    unknown_rank_ip = ipa("192.0.2.%d" % (10 + n))   # the address rank n would have
    cat = [
        # --- truncated
        ("13-byte frame", "truncated", m(truncate=13)),
        ("1-byte frame", "truncated", m(truncate=1)),
        ("IPv4 frame of 14 bytes (no IP header)", "truncated", m(truncate=14)),
        ("IPv4 frame of 33 bytes", "truncated", m(truncate=33)),
        ("ARP request of 41 bytes", "truncated", arp_req(truncate=41)),
        ("UDP with IP total length 27", "truncated", m(total_length=27)),
        ("UDP with IP total length 20 (no UDP header)", "truncated", m(total_length=20)),
        ("UDP with T=20 frame cut to 34", "truncated", m(total_length=20, truncate=34)),
        ("ICMP echo with T=24", "truncated", ping(total_length=24)),
        ("ICMP echo with T=27 (cut to 41)", "truncated", ping(data=b"", total_length=27, truncate=41)),
        ("SwitchML header truncated: UDP len 16, frame cut", "truncated",
         m(total_length=36, udp_len=16, truncate=50)),
        ("SwitchML header truncated: UDP len 16, rest as padding", "truncated",
         m(total_length=36, udp_len=16)),
        ("UDP len 8 (no SwitchML header)", "truncated", m(total_length=28, udp_len=8, truncate=42)),
        ("UDP len 17", "truncated", m(total_length=37, udp_len=17, truncate=51)),
        ("UDP len 16 and msg_type 2 (truncated first)", "truncated",
         m(total_length=36, udp_len=16, msg_type=2, truncate=50)),
        # --- wrong_dst_mac
        ("dst MAC = a worker's MAC", "wrong_dst_mac", m(eth_dst=job.mac[0])),
        ("dst MAC multicast 01:00:5e:00:00:01", "wrong_dst_mac", m(eth_dst=mac("01:00:5e:00:00:01"))),
        ("dst MAC = switch MAC with last bit flipped", "wrong_dst_mac",
         m(eth_dst=sm[:5] + bytes([sm[5] ^ 1]))),
        ("dst MAC = switch MAC with group bit set", "wrong_dst_mac",
         m(eth_dst=bytes([sm[0] ^ 1]) + sm[1:])),
        ("dst MAC ff:ff:ff:ff:ff:fe", "wrong_dst_mac", m(eth_dst=mac("ff:ff:ff:ff:ff:fe"))),
        ("dst MAC zero", "wrong_dst_mac", m(eth_dst=b"\x00" * 6)),
        ("14-byte frame to another MAC", "wrong_dst_mac", m(eth_dst=job.mac[0], truncate=14)),
        ("ARP request to another unicast MAC", "wrong_dst_mac", arp_req(eth_dst=other_host_mac)),
        # --- not_ipv4_udp
        ("EtherType IPv6 (real IPv6/UDP packet)", "not_ipv4_udp",
         raw(lambda t, rng: _ipv6_frame(job, 0))),
        ("contribution with EtherType 0x86DD", "not_ipv4_udp", m(ethertype=ETH_IPV6)),
        ("VLAN-tagged contribution", "not_ipv4_udp",
         raw(lambda t, rng: (lambda fr: fr[:12] + b"\x81\x00\x00\x05" + fr[12:])(build_contrib(t)))),
        ("EtherType 0x88CC", "not_ipv4_udp", m(ethertype=0x88CC)),
        ("EtherType 0x0801", "not_ipv4_udp", m(ethertype=0x0801)),
        ("EtherType 0x0000 (length field)", "not_ipv4_udp", m(ethertype=0x0000)),
        ("IPv4 EtherType, version 6", "not_ipv4_udp", m(version=6)),
        ("IPv4 EtherType, version 0", "not_ipv4_udp", m(version=0)),
        ("version 6 and IHL 6 (version first)", "not_ipv4_udp", m(version=6, ihl=6)),
        ("TCP protocol", "not_ipv4_udp", m(proto=6)),
        ("UDP-Lite protocol", "not_ipv4_udp", m(proto=136)),
        ("protocol 0", "not_ipv4_udp", m(proto=0)),
        ("ICMP timestamp request (type 13)", "not_ipv4_udp", ping(typ=13)),
        ("ICMP echo code 1", "not_ipv4_udp", ping(code=1)),
        ("ICMP echo reply (type 0) to the switch", "not_ipv4_udp", ping(typ=0)),
        ("ICMP dest unreachable", "not_ipv4_udp", ping(typ=3, code=3)),
        ("ARP reply (op 2) for the switch IP", "not_ipv4_udp", arp_req(op=2, eth_dst=sm)),
        ("ARP op 3", "not_ipv4_udp", arp_req(op=3)),
        ("ARP htype 6", "not_ipv4_udp", arp_req(htype=6)),
        ("ARP ptype 0x86DD", "not_ipv4_udp", arp_req(ptype=0x86DD)),
        ("ARP hlen 8", "not_ipv4_udp", arp_req(hlen=8)),
        ("ARP plen 16", "not_ipv4_udp", arp_req(plen=16)),
        ("ARP reply for another IP (op checked first)", "not_ipv4_udp",
         arp_req(op=2, tpa=other_host_ip)),
        # --- ip_options
        ("IHL 6 with 4 bytes of options", "ip_options", m(options=b"\x01\x01\x01\x00")),
        ("IHL 6 with options and bad checksum", "ip_options",
         m(options=b"\x01\x01\x01\x00", csum_delta=1)),
        ("IHL 4", "ip_options", m(ihl=4)),
        ("IHL 15", "ip_options", m(ihl=15)),
        ("IHL 0", "ip_options", m(ihl=0)),
        # --- ip_checksum
        ("IPv4 checksum off by one", "ip_checksum", m(csum_delta=1)),
        ("IPv4 checksum zero", "ip_checksum",
         lambda t, rng: _csum_field_zero(t)),
        ("bad checksum and wrong dst IP", "ip_checksum", m(csum_delta=0x100, dst_ip=other_host_ip)),
        ("bad checksum and total length > frame", "ip_checksum",
         m(csum_delta=3, total_length=full_t + 1)),
        ("bad checksum on ICMP echo", "ip_checksum", ping(csum_delta=7)),
        # --- bad_length
        ("total length 1 longer than the frame", "bad_length", m(total_length=full_t + 1)),
        ("total length 1000 longer than the frame", "bad_length", m(total_length=full_t + 1000)),
        ("total length 19", "bad_length", m(total_length=19)),
        ("total length 0", "bad_length", m(total_length=0)),
        ("total length > frame and MF (length first)", "bad_length",
         m(total_length=full_t + 2, flags_frag=0x2000)),
        ("total length 4 short of the UDP length", "bad_length", m(total_length=full_t - 4)),
        ("T and UDP length both 4 short (rest as padding)", "bad_length",
         m(total_length=full_t - 4, udp_len=full_t - 24)),
        ("UDP length 2 more than T-20", "bad_length", m(udp_len=full_t - 18)),
        ("UDP length 2 less than T-20", "bad_length", m(udp_len=full_t - 22)),
        ("UDP length 0", "bad_length", m(udp_len=0)),
        ("UDP length 65535", "bad_length", m(udp_len=0xFFFF)),
        ("payload 4 bytes short (lengths consistent)", "bad_length",
         lambda t, rng: build_contrib(dict(t, values=t["values"][:-1]))),
        ("payload 4 bytes long (lengths consistent)", "bad_length",
         lambda t, rng: build_contrib(dict(t, values=t["values"] + [12345]))),
        ("UDP length 18 (no payload)", "bad_length",
         lambda t, rng: build_contrib(dict(t, values=[]))),
        ("payload of the other size, size code of the job", "bad_length",
         lambda t, rng: build_contrib(dict(t, values=(t["values"] * 8)[:(256 if P != 1024 else 64)]))),
        ("UDP length mismatch and bad port (length first)", "bad_length",
         m(udp_len=full_t - 22, dport=0x1234)),
        ("SwitchML length wrong and slot = S (length first)", "bad_length",
         lambda t, rng: build_contrib(dict(t, values=t["values"][:-1], slot=S))),
        ("UDP length 8 short of T-20, frame padded", "bad_length",
         m(udp_len=full_t - 28, pad=b"\x00" * 8)),
        # --- ip_fragment
        ("MF set", "ip_fragment", m(flags_frag=0x2000)),
        ("MF and DF set", "ip_fragment", m(flags_frag=0x6000)),
        ("fragment offset 1", "ip_fragment", m(flags_frag=0x0001)),
        ("fragment offset 0x1FFF", "ip_fragment", m(flags_frag=0x1FFF)),
        ("DF and offset 185", "ip_fragment", m(flags_frag=0x4000 | 185)),
        ("fragment and wrong dst IP (fragment first)", "ip_fragment",
         m(flags_frag=0x2000, dst_ip=other_host_ip)),
        ("ICMP echo fragment", "ip_fragment", ping(flags_frag=0x2000)),
        # --- wrong_dst_ip
        ("dst IP 192.0.2.2", "wrong_dst_ip", m(dst_ip=ipa("192.0.2.2"))),
        ("dst IP 255.255.255.255", "wrong_dst_ip", m(dst_ip=ipa("255.255.255.255"))),
        ("dst IP = a worker's IP", "wrong_dst_ip", m(dst_ip=job.ip[0])),
        ("dst IP = switch IP with the top bit flipped", "wrong_dst_ip",
         m(dst_ip=bytes([si[0] ^ 0x80]) + si[1:])),
        ("ARP request for another IP", "wrong_dst_ip", arp_req(tpa=other_host_ip)),
        ("gratuitous ARP of another host", "wrong_dst_ip",
         arp_req(spa=other_host_ip, tpa=other_host_ip, eth_src=other_host_mac)),
        ("ICMP echo to another IP", "wrong_dst_ip", ping(dst_ip=other_host_ip)),
        ("wrong dst IP and bad port (IP first)", "wrong_dst_ip",
         m(dst_ip=other_host_ip, dport=0xBEDF)),
        ("TCP to another IP (IP first)", "wrong_dst_ip", m(dst_ip=other_host_ip, proto=6)),
        # --- bad_port
        ("dst port 0xBEDF", "bad_port", m(dport=0xBEDF)),
        ("dst port 0xBEF0", "bad_port", m(dport=0xBEF0)),
        ("dst port 0", "bad_port", m(dport=0)),
        ("dst port 0xFEE0", "bad_port", m(dport=0xFEE0)),
        ("dst port 0x3EE0", "bad_port", m(dport=0x3EE0)),
        ("dst port 0xFFFF", "bad_port", m(dport=0xFFFF)),
        ("src/dst ports swapped (dst = 0xC000)", "bad_port",
         lambda t, rng: build_contrib(dict(t, sport=t["dport"], dport=0xC000))),
        ("bad port and unknown source (port first)", "bad_port",
         m(dport=0xBEF0, src_ip=other_host_ip)),
        ("bad port and bad msg_type (port first)", "bad_port", m(dport=0xBEDF, msg_type=2)),
        # --- unknown_source
        ("source IP 192.0.2.200", "unknown_source", m(src_ip=ipa("192.0.2.200"))),
        ("source IP = the address rank n would have", "unknown_source", m(src_ip=unknown_rank_ip)),
        ("source IP = switch IP", "unknown_source", m(src_ip=si)),
        ("source IP 0.0.0.0", "unknown_source", m(src_ip=b"\x00" * 4)),
        ("source IP = worker 0 with top bit flipped", "unknown_source",
         m(src_ip=bytes([job.ip[0][0] ^ 0x80]) + job.ip[0][1:])),
        ("unknown source and bad msg_type (source first)", "unknown_source",
         m(src_ip=other_host_ip, msg_type=0)),
        ("unknown source and slot = S (source first)", "unknown_source",
         m(src_ip=other_host_ip, slot=S)),
        ("unknown source and wrong source port (source first)", "unknown_source",
         m(src_ip=other_host_ip, sport=0xC000)),
        # --- wrong_src_port
        ("source port 0xC000 (ephemeral) from a worker's address", "wrong_src_port",
         m(sport=0xC000)),
        ("source port 0", "wrong_src_port", m(sport=0)),
        ("source port = worker port + 1", "wrong_src_port", m(sport=job.worker_port + 1)),
        ("source port = worker port ^ 0x8000", "wrong_src_port", m(sport=job.worker_port ^ 0x8000)),
        ("wrong source port and bad msg_type (port first)", "wrong_src_port",
         m(sport=0xC001, msg_type=0)),
        ("wrong source port on a session message (port first)", "wrong_src_port",
         m(sport=0xC001, msg_type=8, setbit=1, job_number=1)),
        # --- bad_msg_type
        ("msg_type 0", "bad_msg_type", m(msg_type=0)),
        ("msg_type 9 (session is 8)", "bad_msg_type", m(msg_type=9)),
        ("msg_type 2", "bad_msg_type", m(msg_type=2)),
        ("msg_type 3", "bad_msg_type", m(msg_type=3)),
        ("msg_type 15", "bad_msg_type", m(msg_type=15)),
        ("msg_type 0 with the unused bit", "bad_msg_type", m(msg_type=0, unused=1)),
        ("msg_type 2 and wrong size (type first)", "bad_msg_type", m(msg_type=2, size=(c + 1) & 7)),
        # --- bad_size
        ("size code 0", "bad_size", m(size=0) if c != 0 else m(size=1)),
        ("size code 2", "bad_size", m(size=2) if c != 2 else m(size=1)),
        ("size code 7", "bad_size", m(size=7)),
        ("size code 5", "bad_size", m(size=5)),
        ("other size code with a payload of that size", "bad_size",
         lambda t, rng: build_contrib(dict(t, size=(3 if c != 3 else 1),
                                           values=(t["values"] * 8)[:(256 if c != 3 else 64)]))),
        ("wrong size and slot = S (size first)", "bad_size", m(size=(c ^ 2), slot=S)),
        # --- bad_slot
        ("slot = S, set 0", "bad_slot", m(slot=S, setbit=0)),
        ("slot = S, set 1", "bad_slot", m(slot=S, setbit=1)),
        ("slot = S + 1", "bad_slot", m(slot=S + 1)),
        ("slot 0x7FFF", "bad_slot", m(pool_index=0x7FFF)),
        ("pool_index 0xFFFF", "bad_slot", m(pool_index=0xFFFF)),
    ]
    if S < 0x4000:
        cat.append(("slot = S | 0x4000", "bad_slot", m(pool_index=S | 0x4000)))
    return cat


# Valid edge cases (accepted contributions); each returns overrides for the field dict.
VALID_FLAVORS = [
    ("plain", lambda job, f, rng: {}),
    ("broadcast dst MAC", lambda job, f, rng: {"eth_dst": BCAST}),
    ("dst port 0xBEEF", lambda job, f, rng: {"dport": 0xBEEF}),
    ("dst port 0xBEE0", lambda job, f, rng: {"dport": 0xBEE0}),
    ("dst port 0xBEE7", lambda job, f, rng: {"dport": 0xBEE7}),
    ("unused bit 3 set (echoed)", lambda job, f, rng: {"unused": 1}),
    ("DF set", lambda job, f, rng: {"flags_frag": 0x4000}),
    ("reserved IP flag bit set", lambda job, f, rng: {"flags_frag": 0x8000}),
    ("TTL 1, TOS 0xB8, random ident", lambda job, f, rng: {"ttl": 1, "tos": 0xB8,
                                                          "ident": rng.randrange(65536)}),
    ("non-zero UDP checksum", lambda job, f, rng: {"udp_csum": rng.randrange(1, 65536)}),
    ("6 bytes of link padding", lambda job, f, rng: {"pad": b"\xa5\x5a\x00\xff\x01\x02"}),
    ("source MAC not the worker's", lambda job, f, rng: {"eth_src": mac("02:00:5a:00:02:63")}),
    ("job number 0xFF, tsi 0xFFFFFFFF", lambda job, f, rng: {"job_number": 0xFF,
                                                            "tsi": 0xFFFFFFFF}),
]


# --------------------------------------------------------------------------------------------
# scenarios

def scenario(*job_args, **job_kw):
    """Makes body(job, tr, rng), which fills the Trace `tr` of a fresh Job(*job_args, **job_kw),
    a scenario: a function of the rng that returns (job, trace)."""
    def wrap(body):
        def run(rng):
            job = Job(*job_args, **job_kw)
            tr = Trace(job)
            body(job, tr, rng)
            return job, tr
        return run
    return wrap


def catalogue_rounds(job, tr, rng, cat, tsi, job_number, scrub, add_valid, after_round):
    """Rounds of contributions, each in the next of VALID_FLAVORS, until every frame of `cat` is
    sent (and at least 8 rounds and every flavour). Before each contribution, 1-3 frames of the
    catalogue, mutated from it (garbage values) or from an already sent contribution of this
    round or the previous one (would be a duplicate / retransmission trigger if wrongly
    accepted); `scrub(t)` cleans such a copy first. `add_valid(f, label, rnd, first)` adds the
    contribution itself, `after_round(rnd, sent)` what follows a round."""
    flav_i = 0
    ci = 0
    rnd = 0
    prev_round = None
    while ci < len(cat) or flav_i < len(VALID_FLAVORS) or rnd < 8:
        s, v = rnd % job.slots, (rnd // job.slots) & 1
        order = list(range(job.n))
        rng.shuffle(order)
        sent = []
        for r in order:
            vals = rand_values(rng, job.k, "mix")
            f = contrib_fields(job, r, s, v, vals, e0=rand_exp(rng), e1=rand_exp(rng), tsi=tsi,
                               job_number=job_number, dport=0xBEE0 + rng.randrange(16))
            tsi += 1
            label, fl = VALID_FLAVORS[flav_i % len(VALID_FLAVORS)]
            flav_i += 1
            f.update(fl(job, f, rng))
            for _ in range(rng.randint(1, 3)):
                if ci >= len(cat):
                    break
                pool = [f] * 3 + sent + (prev_round or [])
                t = dict(rng.choice(pool))
                t["values"] = rand_values(rng, job.k, "full")
                t["e0"], t["e1"] = 127, 127
                t["pad"] = b""
                scrub(t)
                blabel, expect, fn = cat[ci]
                ci += 1
                tr.add(fn(t, rng), blabel, expect)
            add_valid(f, label, rnd, not sent)
            sent.append(f)
        after_round(rnd, sent)
        prev_round = sent
        rnd += 1


@scenario(3, 256, 4)
def sc_malformed(job, tr, rng):
    cat = bad_catalogue(job)
    rng.shuffle(cat)
    other_mac = mac("02:00:5a:00:02:63")

    def scrub(t):
        if t.get("csum") == 0xFFFF:
            t["csum"] = None

    def add_valid(f, label, rnd, first):
        tr.add(build_contrib(f), "valid: " + label, "contribution")

    def after_round(rnd, sent):
        # a retransmission of the completed round now and then
        if rnd % 3 == 2:
            tr.add(build_contrib(sent[0]), "retransmission to a complete round", "duplicate")
        # a valid ARP and ping now and then
        if rnd == 3:
            tr.add(arp_frame(BCAST, other_mac, spa=ipa("192.0.2.99"), tpa=job.si), "valid ARP", "arp")
        if rnd == 5:
            tr.add(icmp_echo_frame(job.sm, job.mac[1], job.ip[1], job.si, b"abc"), "valid ping", "icmp")

    catalogue_rounds(job, tr, rng, cat, 0x100, 0x2A, scrub, add_valid, after_round)


@scenario(2, 256, 2)
def sc_arp(job, tr, rng):
    sm, si = job.sm, job.si
    host_mac, host_ip = mac("02:00:5a:00:02:63"), ipa("192.0.2.99")
    garbage = bytes(rng.randrange(256) for _ in range(64))
    w0m, w0i, w1m, w1i = job.mac[0], job.ip[0], job.mac[1], job.ip[1]
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=si), "broadcast, unpadded (42)", "arp")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=si, pad=b"\x00" * 18), "broadcast, zero-padded to 60", "arp")
    tr.add(arp_frame(BCAST, w1m, spa=w1i, tpa=si, pad=garbage[:18]), "broadcast, garbage-padded to 60", "arp")
    tr.add(arp_frame(sm, w1m, spa=w1i, tpa=si, pad=b"\x00" * 18), "unicast to switch, padded", "arp")
    tr.add(arp_frame(sm, w1m, spa=w1i, tpa=si), "unicast to switch, unpadded", "arp")
    tr.add(arp_frame(BCAST, host_mac, spa=host_ip, tpa=si), "from a non-worker host", "arp")
    tr.add(arp_frame(BCAST, host_mac, sha=mac("02:00:5a:00:03:07"), spa=host_ip, tpa=si,
                     pad=b"\x00" * 18), "sender hw address differs from Ethernet source", "arp")
    tr.add(arp_frame(BCAST, host_mac, spa=b"\x00" * 4, tpa=si, pad=b"\x00" * 18),
           "ARP probe (sender IP 0.0.0.0)", "arp")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tha=mac("12:34:56:78:9a:bc"), tpa=si),
           "target hw address non-zero (ignored)", "arp")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=si, pad=garbage[:8]), "50-byte frame", "arp")
    tr.add(arp_frame(BCAST, w1m, spa=w1i, tpa=si, pad=garbage[:58]), "100-byte frame", "arp")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=si, truncate=41), "41 bytes", "truncated")
    tr.add(arp_frame(sm, w0m, op=2, spa=w0i, tpa=si, tha=sm), "ARP reply", "not_ipv4_udp")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=ipa("192.0.2.2")), "for another IP", "wrong_dst_ip")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=w1i), "for a worker's IP", "wrong_dst_ip")
    tr.add(arp_frame(w1m, w0m, spa=w0i, tpa=si), "to another MAC", "wrong_dst_mac")
    # ARP interleaved with a few rounds of contributions
    contribs = protocol_traffic(job, rng, 3, p_dup=0.2, values="small", job_number=1)
    for i, fr in enumerate(contribs):
        tr.add(fr)
        if i % 2 == 0:
            r = rng.randrange(job.n)
            pad = rng.choice([b"", b"\x00" * 18, garbage[:18]])
            tr.add(arp_frame(rng.choice([BCAST, sm]), job.mac[r], spa=job.ip[r], tpa=si, pad=pad),
                   None, "arp")
    # an untagged job does not look into tags (§1 step 3 skipped): EtherType 0x8100 / 0x88A8
    # is dropped at step 5 (no rng used here, so the frames above do not depend on these)
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=si, tag=vlan_tag(0x0005)),
           "802.1Q-tagged ARP request (VID 5) to an untagged job", "not_ipv4_udp")
    tr.add(arp_frame(BCAST, w1m, spa=w1i, tpa=si, tag=vlan_tag(0xA000), pad=b"\x00" * 14),
           "priority-tagged ARP request (VID 0) to an untagged job", "not_ipv4_udp")
    tr.add(arp_frame(BCAST, w0m, spa=w0i, tpa=si, tag=vlan_tag(0x0005, ETH_QINQ)),
           "802.1ad-tagged ARP request to an untagged job", "not_ipv4_udp")


@scenario(3, 256, 4)
def sc_session(job, tr, rng):
    """docs/switch.md §2.1: a run without sessions leaves partial rounds behind; a new run probes,
    joins (with duplicates and lost replies) and opens epoch 1, which clears them; frames of the
    earlier run are dropped as stale; a second session (epoch 2) follows on the running switch."""
    zeros = [0] * job.k

    def probe(r, label, expect="session_duplicate", slot=0):
        tr.add(contribution(job, r, slot, 0, zeros, job_number=rng.randrange(256), msg_type=8,
                            tsi=rng.randrange(1 << 32)), label, expect)

    def join(r, p, label, expect, slot=0):
        tr.add(contribution(job, r, slot, 1, zeros, job_number=p, msg_type=8, tsi=r), label, expect)

    def C(r, s, v, epoch, label=None, expect="contribution", tsi=0):
        tr.add(contribution(job, r, s, v, rand_values(rng, job.k, "mix"), e0=rand_exp(rng),
                            e1=rand_exp(rng), tsi=tsi, job_number=epoch, dport=0xBEE0 + s),
               label, expect)

    # the earlier run (no session, job number 9): complete rounds and leftovers
    for s in range(4):
        for r in range(3):
            C(r, s, 0, 9, "old run s%d r%d" % (s, r))
    C(0, 1, 1, 9, "leftover: r0 alone in slot 1 set 1")
    C(2, 3, 1, 9, "leftover: r2 alone in slot 3 set 1")
    C(1, 2, 0, 9, "leftover: r1 retransmission of a complete round", "duplicate")
    # the new run: probes, joins
    probe(0, "probe r0: epoch 0")
    probe(1, "probe r1 on slot 3", slot=3)
    tr.add(contribution(job, 0, 0, 1, zeros, job_number=1, msg_type=8, size=(job.c + 1) & 7),
           "a join of the wrong size (the type passes, the size fails)", "bad_size")
    tr.add(contribution(job, 0, job.slots, 1, zeros, job_number=1, msg_type=8),
           "a join to slot S", "bad_slot")
    join(0, 1, "join r0 epoch 1", "session")
    join(0, 1, "join r0 again (silent)", "session_duplicate")
    join(1, 7, "join r1 of a wrong epoch: told epoch 0", "session_duplicate")
    join(1, 1, "join r1 epoch 1", "session")
    C(2, 1, 1, 9, "old run frame before the session opens (still accepted)")
    join(2, 1, "join r2 opens epoch 1", "session")
    join(1, 1, "join r1 repeated (reply lost): told epoch 1", "session_duplicate")
    C(0, 1, 1, 9, "old run retransmission: stale", "stale_session")
    C(1, 3, 0, 0, "job number 0: stale", "stale_session")
    # epoch 1 rounds; slots 1 and 3 start clean (sets 1 there, as the old run would have used)
    for s, v in [(0, 0), (1, 1), (2, 0), (3, 1), (0, 1)]:
        order = [0, 1, 2]
        rng.shuffle(order)
        for r in order:
            C(r, s, v, 1, "epoch 1 s%d v%d r%d" % (s, v, r), tsi=0x100 + s)
        C(order[0], s, v, 1, "epoch 1 retransmission", "duplicate", tsi=0x100 + s)
    C(1, 2, 1, 1, "epoch 1 partial round left behind")
    # a second session on the running switch
    for r in (2, 0):
        probe(r, "probe r%d: epoch 1" % r)
        join(r, 2, "join r%d epoch 2" % r, "session")
    join(1, 2, "join r1 opens epoch 2", "session", slot=2)
    C(0, 2, 1, 1, "epoch 1 frame: stale", "stale_session")
    for r in (1, 0, 2):
        C(r, 2, 1, 2, "epoch 2 s2 v1 r%d" % r, tsi=0x200)


@scenario(2, 256, 2)
def sc_ping(job, tr, rng):
    sm, si = job.sm, job.si
    host_mac, host_ip = mac("02:00:5a:00:02:63"), ipa("198.51.100.7")
    seq = 0

    def P(data_len, *, src=0, pad=b"", label=None, expect="icmp", **kw):
        nonlocal seq
        seq += 1
        data = bytes(rng.randrange(256) for _ in range(data_len))
        if src is None:
            em, ei = host_mac, host_ip
        else:
            em, ei = job.mac[src], job.ip[src]
        args = dict(ident=rng.randrange(65536), seq=seq, ip_ident=rng.randrange(65536))
        args.update(kw)
        eth_dst = args.pop("eth_dst", sm)
        tr.add(icmp_echo_frame(eth_dst, em, ei, si, data, pad=pad, **args), label, expect)

    for dl in [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 17, 18, 19, 31, 32, 33, 48, 56, 57, 63, 64, 65, 99,
               100, 255, 256, 511, 1000, 1001, 1471, 1472]:
        P(dl, src=dl % 2, label="data %d" % dl)
    # padding after the IP total length
    P(0, pad=b"\x00" * 18, label="data 0, zero padding to 60")
    P(0, pad=bytes(range(1, 19)), label="data 0, garbage padding to 60")
    P(1, pad=b"\xee" * 17, label="data 1, padding to 60")
    P(10, pad=b"\x00" * 8, label="data 10, padding to 60")
    P(17, pad=b"\x5a", label="data 17 (59 bytes), one byte of padding")
    P(56, pad=b"\xde\xad\xbe\xef", label="data 56 plus 4 bytes after T")
    P(3, pad=bytes(rng.randrange(256) for _ in range(200)), label="data 3 plus 200 bytes after T")
    # header variations, copied into the reply
    P(32, flags_frag=0x4000, label="DF set")
    P(32, tos=0xB8, label="DSCP EF")
    P(32, tos=0x03, label="ECN CE")
    P(32, ttl=1, label="TTL 1")
    P(32, ttl=255, flags_frag=0x8000, label="TTL 255, reserved flag")
    P(32, ip_ident=0, ident=0, seq=0, label="all ids zero")
    P(32, ip_ident=0xFFFF, ident=0xFFFF, seq=0xFFFF, label="all ids 0xFFFF")
    P(32, src=None, label="from a non-worker host")
    P(24, eth_dst=BCAST, label="to broadcast MAC")
    # ICMP checksum is not checked: odd values must be updated by the formula anyway
    for c in [0x0000, 0xFFFF, 0xF7FF, 0xF800, 0x0800, 0x07FF, 0x0001, 0xFFFE, 0x1234]:
        P(20, icmp_csum=c, label="ICMP checksum 0x%04x (not checked)" % c)
    # valid checksums whose value sits at the edges of the update formula
    for _ in range(24):
        P(rng.randrange(0, 80), src=rng.randrange(2), label="random")
    # drops
    P(8, typ=0, label="echo reply to the switch", expect="not_ipv4_udp")
    P(8, code=1, label="echo request code 1", expect="not_ipv4_udp")
    P(8, total_length=27, label="T=27", expect="truncated")
    P(8, flags_frag=0x2000, label="MF", expect="ip_fragment")
    P(8, total_length=100, label="T longer than frame", expect="bad_length")
    # pings interleaved with contributions
    contribs = protocol_traffic(job, rng, 3, p_dup=0.2, values="small", job_number=2)
    for i, fr in enumerate(contribs):
        tr.add(fr)
        if i % 2 == 1:
            P(rng.randrange(0, 64), src=rng.randrange(2), pad=rng.choice([b"", b"\x00" * 20]),
              label=None)
    # tagged echo requests to an untagged job: dropped at step 5 (no rng used here)
    for tag, label in [(vlan_tag(0x0005), "802.1Q-tagged (VID 5)"),
                       (vlan_tag(0x6000), "priority-tagged (VID 0)"),
                       (vlan_tag(0x0005, ETH_QINQ), "802.1ad-tagged")]:
        tr.add(icmp_echo_frame(sm, job.mac[0], job.ip[0], si, b"tagged", tag=tag),
               label + " echo request to an untagged job", "not_ipv4_udp")


@scenario(3, 256, 2)
def sc_duplicates(job, tr, rng):
    vals = {}

    def C(r, s, v, rnd, label=None, expect=None):
        key = (r, s, v, rnd)
        if key not in vals:
            vals[key] = (rand_values(rng, job.k, "mix"), rand_exp(rng), rand_exp(rng))
        x, e0, e1 = vals[key]
        tr.add(contribution(job, r, s, v, x, e0=e0, e1=e1, tsi=(s << 8) | rnd, job_number=3,
                            dport=0xBEE0 + s), label, expect)

    # slot 0, round A (set 0)
    C(0, 0, 0, 0, "A r0", "contribution")
    C(0, 0, 0, 0, "A r0 dup, incomplete", "duplicate")
    C(1, 0, 0, 0, "A r1", "contribution")
    C(0, 0, 0, 0, "A r0 dup, incomplete", "duplicate")
    C(2, 0, 0, 0, "A r2 completes", "contribution")
    C(1, 0, 0, 0, "A r1 retransmission", "duplicate")
    C(0, 0, 0, 0, "A r0 retransmission", "duplicate")
    C(2, 0, 0, 0, "A r2 retransmission", "duplicate")
    # slot 1 round A' (set 0) interleaved
    C(2, 1, 0, 0, "A' r2", "contribution")
    C(2, 1, 0, 0, "A' r2 dup", "duplicate")
    # slot 0, round B (set 1)
    C(0, 0, 1, 1, "B r0 (clears r0 in set 0)", "contribution")
    C(0, 0, 1, 1, "B r0 dup", "duplicate")
    C(1, 0, 1, 1, "B r1", "contribution")
    C(2, 0, 0, 0, "A r2 retransmission while B runs: result A", "duplicate")
    C(1, 1, 0, 0, "A' r1", "contribution")
    C(2, 0, 1, 1, "B r2 completes", "contribution")
    C(2, 0, 1, 1, "B r2 retransmission", "duplicate")
    C(0, 1, 0, 0, "A' r0 completes", "contribution")
    # slot 0, round C (set 0): bitmap of set 0 must have been cleared by B
    C(0, 0, 0, 2, "C r0 new (bit cleared by B)", "contribution")
    C(2, 0, 1, 1, "B r2 stale retransmission during C", "duplicate")
    C(1, 0, 0, 2, "C r1", "contribution")
    C(1, 0, 0, 2, "C r1 dup incomplete", "duplicate")
    C(2, 0, 0, 2, "C r2 completes", "contribution")
    C(0, 0, 0, 0, "A-data r0 stale retransmission after C: C's result", "duplicate")
    # slot 1 round B' (set 1) with a stale set-0 retransmission that is NEW in round B'
    C(1, 1, 1, 1, "B' r1", "contribution")
    C(0, 1, 0, 0, "A' r0 retransmission (still seen): result A'", "duplicate")
    C(1, 1, 0, 0, "A' r1 retransmission after moving on: new in set 0", "contribution")
    C(2, 1, 1, 1, "B' r2", "contribution")
    C(0, 1, 1, 1, "B' r0 completes", "contribution")
    C(1, 1, 0, 0, "A' r1 again: duplicate of incomplete set 0", "duplicate")
    # slot 0 round D (set 1), ranks in reverse order, every frame sent twice in a row
    for r in (2, 1, 0):
        C(r, 0, 1, 3, "D r%d" % r, "contribution")
        C(r, 0, 1, 3, "D r%d twice" % r, "duplicate")
    # then random protocol traffic with heavy duplication on both slots
    for fr in protocol_traffic(job, rng, 12, p_dup=0.6, job_number=4, tsi_base=0x10000):
        tr.add(fr)


@scenario(1, 256, 4)
def sc_n1(job, tr, rng):
    seqs = [0] * job.slots
    for i in range(40):
        s = rng.randrange(job.slots)
        x = rand_values(rng, job.k, "mix")
        kind = rng.random()
        v = seqs[s] & 1
        if kind < 0.6:
            seqs[s] += 1
        tr.add(contribution(job, 0, s, v, x, e0=rand_exp(rng), e1=rand_exp(rng), tsi=i,
                            job_number=5, dport=0xBEE0 + (i & 15)))
        if rng.random() < 0.3:   # retransmission of the same frame
            tr.add(tr.frames[-1], None, "duplicate")
    # explicit: set 0, dup, set 1, set 0 again (new again after the clearing)
    for v, exp in [(0, None), (0, "duplicate"), (1, "contribution"), (0, "contribution"),
                   (0, "duplicate"), (1, "contribution"), (1, "duplicate")]:
        tr.add(contribution(job, 0, 3, v, [v + 1] * job.k, e0=-3, e1=4, tsi=0x77, job_number=5),
               None, exp)


def sc_nx(n, slots, rounds, p_dup, payload=256, values="mix", addr=None):
    @scenario(n, payload, slots, **(addr or {}))
    def fn(job, tr, rng):
        for fr in protocol_traffic(job, rng, rounds, p_dup=p_dup, values=values,
                                   job_number=n & 0xFF):
            tr.add(fr)
    return fn


@scenario(4, 256, 2)
def sc_wrap(job, tr, rng):
    k = job.k
    MAX, MIN = 2**31 - 1, -2**31
    rounds = []
    # all max: 4*MAX wraps to -4; all min: wraps to 0
    rounds.append(([[MAX] * k] * 4, [0, 0, 0, 0], [0, 0, 0, 0]))
    rounds.append(([[MIN] * k] * 4, [-1, -2, -3, -4], [-128, -128, -128, -128]))
    # lane patterns: each lane a different combination
    pats = [
        (MAX, 1, 0, 0), (MIN, -1, 0, 0), (MAX, MAX, MIN, MIN), (MAX, MAX, MAX, 1),
        (MIN, MIN, MIN, -1), (-1, -1, -1, -1), (1, -1, 1, -1), (2**30, 2**30, 0, 0),
        (-2**30, -2**30, -1, 0), (MAX, MIN, MAX, MIN), (0, 0, 0, MIN), (MAX, 0, 0, 1),
    ]
    cols = [[pats[i % len(pats)][r] for i in range(k)] for r in range(4)]
    rounds.append((cols, [-1, 5, -100, 3], [1, -1, 0, -128]))       # signed max 5 / 1 (not 0xFF)
    rounds.append((cols[::-1], [127, -128, -1, 0], [-1, -1, -1, -1]))  # max first
    rounds.append(([[rng.randint(MIN, MAX) for _ in range(k)] for _ in range(4)],
                   [-128, -127, -126, -125], [-2, -3, -4, -1]))       # max last / all negative
    rounds.append(([[rng.choice([MAX, MIN, -1, 1]) for _ in range(k)] for _ in range(4)],
                   [0, -1, 0, -1], [-128, 127, -128, 127]))
    rounds.append(([[MAX - r for _ in range(k)] for r in range(4)], [-7, -7, -7, -7], [127, 126, 125, 124]))
    for _ in range(6):
        rounds.append(([[rng.randint(MIN, MAX) for _ in range(k)] for _ in range(4)],
                       [rng.randint(-128, 127) for _ in range(4)],
                       [rng.randint(-128, 127) for _ in range(4)]))
    for i, (cols_, e0s, e1s) in enumerate(rounds):
        s, v = i % 2, (i // 2) & 1
        order = [0, 1, 2, 3] if i % 3 == 0 else ([3, 2, 1, 0] if i % 3 == 1 else [2, 0, 3, 1])
        for r in order:
            tr.add(contribution(job, r, s, v, cols_[r], e0=e0s[r], e1=e1s[r], tsi=i,
                                job_number=6, dport=0xBEE0 + r))
        # a retransmission to check the stored result is the wrapped one
        tr.add(contribution(job, order[0], s, v, cols_[order[0]], e0=e0s[order[0]],
                            e1=e1s[order[0]], tsi=i, job_number=6, dport=0xBEE0 + order[0]),
               None, "duplicate")


@scenario(3, 256, 8, lanes16=True)
def sc_lanes16(job, tr, rng):
    """16-bit lanes (docs/switch.md §9) on a job with H: each round of a slot picks its width
    (the port, 0xBEE0 + r or 0xBEF0 + r), every rank sends it so; lanes at the int16 extremes
    so that each lane wraps and the low lanes carry out of bit 15; early retransmissions, and
    the same slot at the other width mid-round and after completion (lane_mismatch, nothing
    changes); a retransmission at the round's width is answered from the stored sums."""
    LO, HI = -2**15, 2**15 - 1

    def lane():
        return rng.choice([HI, LO, -1, 1, 0, rng.randint(LO, HI), rng.randint(LO, HI)])

    def word(hi, lo):
        return s32((hi << 16) | (lo & 0xFFFF))

    for rnd in range(4):
        v = rnd & 1
        slots = list(range(job.slots))
        rng.shuffle(slots)
        for s in slots:
            width = rng.choice([16, 32])
            base = 0xBEF0 if width == 16 else 0xBEE0
            other = 0xBEE0 if width == 16 else 0xBEF0
            order = list(range(job.n))
            rng.shuffle(order)
            vals = {r: [word(lane(), lane()) for _ in range(job.k)] for r in order}
            for i, r in enumerate(order):
                tr.add(contribution(job, r, s, v, vals[r], e0=rng.randint(-8, 8), tsi=rnd * 100 + s,
                                    dport=base + r),
                       "round %d slot %d rank %d, %d-bit lanes" % (rnd, s, r, width), "contribution")
                if i == 0 and rng.random() < 0.4:
                    tr.add(contribution(job, r, s, v, vals[r], dport=base + r), "early retransmission",
                           "duplicate")
                if i < job.n - 1 and rng.random() < 0.3:
                    q = order[i + 1]
                    tr.add(contribution(job, q, s, v, [7] * job.k, dport=other + q),
                           "rank %d at the other width mid-round" % q, "lane_mismatch")
            r = rng.choice(order)
            tr.add(contribution(job, r, s, v, vals[r], dport=base + r), "retransmission after completion",
                   "duplicate")
            if rng.random() < 0.3:
                tr.add(contribution(job, r, s, v, vals[r], dport=other + r),
                       "the same retransmission at the other width", "lane_mismatch")


def sc_switchml(zero):
    """SwitchML's DPDK workers with their defaults (docs/switch.md §1 6.4, 7.5, §3): worker port
    4000 and 4 threads, thread t owning slots 2t and 2t + 1 and sending them from port 4000 + t;
    with `zero`, the IPv4 checksum computed in the first window and left at 0 after it (a job
    with zero_ip_checksum), else always computed. Every result goes to the port of the
    contribution that completed the round; a retransmission is answered to its own port. Strays
    from ports outside 4000..4004 and wrong non-zero checksums are dropped."""
    return scenario(3, 256, 8, worker_port=4000, worker_ports=4, zero_ip_checksum=zero)(
        lambda job, tr, rng: switchml_traffic(job, tr, rng, zero))


def switchml_traffic(job, tr, rng, zero):
    MIN, MAX = -2**31, 2**31 - 1
    for rnd in range(3):
        v = rnd & 1
        slots = list(range(job.slots))
        rng.shuffle(slots)
        for s in slots:
            port = 4000 + s // 2
            order = list(range(job.n))
            rng.shuffle(order)
            vals = {r: [rng.randint(MIN, MAX) for _ in range(job.k)] for r in order}
            csum = None if rnd == 0 or not zero else 0
            for i, r in enumerate(order):
                tr.add(contribution(job, r, s, v, vals[r], e0=rng.randint(-8, 8), tsi=rnd * 100 + s,
                                    sport=port, csum=csum),
                       "round %d slot %d rank %d" % (rnd, s, r), "contribution")
                if i == 0 and rng.random() < 0.5:
                    tr.add(contribution(job, r, s, v, vals[r], sport=port, csum=csum),
                           "early retransmission", "duplicate")
                if rng.random() < 0.15:
                    bad = rng.choice([3999, 4004, 0xBEE0, 0])
                    tr.add(contribution(job, r, s, v, [7] * job.k, sport=bad, csum=csum),
                           "stray from port %d" % bad, "wrong_src_port")
            r = rng.choice(order)
            tr.add(contribution(job, r, s, v, vals[r], sport=port, csum=0 if zero else None),
                   "retransmission after completion", "duplicate")
    r = rng.randrange(job.n)
    tr.add(contribution(job, r, 0, 1, [1] * job.k, sport=4000, csum=1),
           "a wrong non-zero checksum", "ip_checksum")
    tr.add(contribution(job, r, 0, 1, [1] * job.k, sport=4000, csum=0xFFFF),
           "0xFFFF: the other zero, verifies only where 0x0000 would be computed", "ip_checksum")
    tr.add(icmp_echo_frame(job.sm, job.mac[0], job.ip[0], job.si, b"swml"), "ping, checksum computed", "icmp")
    ping = bytearray(icmp_echo_frame(job.sm, job.mac[1], job.ip[1], job.si, b"swml0"))
    ping[24:26] = b"\x00\x00"
    tr.add(bytes(ping), "ping, IPv4 checksum 0", "icmp" if zero else "ip_checksum")


@scenario(2, 256, 2)
def sc_csum_alias(job, tr, rng):
    """Interpretation-sensitive, kept apart: an IPv4 header whose correct checksum is 0x0000,
    sent with the field 0xFFFF (the other one's-complement zero).  The RFC 1071 check (the sum
    over bytes 14..34 is 0xFFFF) accepts it; a compute-and-compare check would reject it as
    ip_checksum.  This trace follows the RFC 1071 reading."""
    for i in range(4):
        s, v = i % 2, (i // 2) & 1
        for r in (0, 1):
            f = contrib_fields(job, r, s, v, rand_values(rng, job.k, "mix"), e0=rand_exp(rng),
                               e1=rand_exp(rng), tsi=i, job_number=0xA1, dport=0xBEE0 + r)
            if r == i % 2:
                f = _csum_zero_alias(job, f)
                tr.add(build_contrib(f), "0xFFFF for a zero checksum", "contribution")
                f = dict(f, csum=None)
                tr.add(build_contrib(f), "same frame, checksum 0x0000", "duplicate")
            else:
                tr.add(build_contrib(f), None, "contribution")
    # an echo request with the aliased header checksum
    for _ in range(64):
        ident = rng.randrange(65536)
        q = bytearray(icmp_echo_frame(job.sm, job.mac[0], job.ip[0], job.si, b"alias",
                                      ip_ident=ident))
        if u16(q, 24) == 0:
            q[24:26] = b"\xff\xff"
            tr.add(bytes(q), "echo request, header checksum 0xFFFF for 0x0000", "icmp")
            break
    else:
        # search the identification that makes the checksum zero
        probe = bytearray(icmp_echo_frame(job.sm, job.mac[0], job.ip[0], job.si, b"alias",
                                          ip_ident=0))
        probe[24:26] = b"\x00\x00"
        ident = (0xFFFF - ones_sum(probe[14:34])) & 0xFFFF
        q = bytearray(icmp_echo_frame(job.sm, job.mac[0], job.ip[0], job.si, b"alias",
                                      ip_ident=ident))
        assert u16(q, 24) == 0
        q[24:26] = b"\xff\xff"
        tr.add(bytes(q), "echo request, header checksum 0xFFFF for 0x0000", "icmp")


def closed_loop(job, rng, chunks, p_loss, p_dup, p_res_loss, dmin=10.0, dmax=80.0,
                timeout=400.0, values="mix", job_number=9, p_foreign=0.0):
    """SwitchML-like workers (a window of all S slots, set flips per slot, retransmission timers
    with backoff) talking to the model through a lossy, duplicating, reordering network.  Each
    worker's frames for the same slot stay in order (per-(worker, slot) FIFO), so the protocol
    stays correct and every result the workers accept is checked against the true sum."""
    n, S, k = job.n, job.slots, job.k
    sw = Switch(job)
    data = [[(rand_values(rng, k, values), rand_exp(rng), rand_exp(rng)) for _ in range(chunks)]
            for _ in range(n)]
    want = []
    for c in range(chunks):
        sums = [0] * k
        for w in range(n):
            for i, x in enumerate(data[w][c][0]):
                sums[i] += x
        want.append(([s32(x) for x in sums], max(data[w][c][1] for w in range(n)),
                     max(data[w][c][2] for w in range(n))))
    ev = []
    seqno = [0]

    def push(t, kind, *a):
        seqno[0] += 1
        heapq.heappush(ev, (t, seqno[0], kind, a))

    last_arr = {}
    state = [[None] * S for _ in range(n)]   # (chunk, set, frame, generation)
    gen = [0]
    inputs = []
    done = [0] * n

    def send(now, w, s, frame):
        if job.vlan is not None:
            # every (re)transmission with its own PCP and DEI (ignored by the switch)
            frame = insert_tag(frame, vlan_tag((rng.randrange(8) << 13) | (rng.randrange(2) << 12)
                                               | job.vlan))
            if rng.random() < p_foreign:
                # the same contribution with garbage values outside the job's VLAN: it must be
                # dropped as wrong_vlan, or it corrupts the round
                bad = bytearray(untag(frame))
                bad[52:] = bytes(rng.randrange(256) for _ in range(len(bad) - 52))
                kind = rng.randrange(4)
                if kind == 0:
                    bad = bytes(bad)
                elif kind == 1:
                    bad = insert_tag(bad, vlan_tag(rng.randrange(8) << 13))
                elif kind == 2:
                    bad = insert_tag(bad, vlan_tag(job.vlan ^ (1 << rng.randrange(12))))
                else:
                    bad = insert_tag(bad, vlan_tag(job.vlan, ETH_QINQ))
                push(now + rng.uniform(dmin, dmax), "sw", w, s, bytes(bad))
        if rng.random() < p_loss:
            return
        copies = 2 if rng.random() < p_dup else 1
        for _ in range(copies):
            t = now + rng.uniform(dmin, dmax)
            t = max(t, last_arr.get((w, s), 0.0) + 0.001)
            last_arr[(w, s)] = t
            push(t, "sw", w, s, frame)

    def start(now, w, s, c, v):
        x, e0, e1 = data[w][c]
        fr = contribution(job, w, s, v, x, e0=e0, e1=e1, tsi=c, job_number=job_number,
                          dport=0xBEE0 + (w % 16))
        gen[0] += 1
        state[w][s] = (c, v, fr, gen[0])
        send(now, w, s, fr)
        push(now + timeout, "timer", w, s, gen[0], timeout)

    for w in range(n):
        for s in range(min(S, chunks)):
            start(rng.uniform(0, 5), w, s, s, 0)
    steps = 0
    while ev:
        steps += 1
        assert steps < 2_000_000
        now, _, kind, a = heapq.heappop(ev)
        if kind == "sw":
            w, s, fr = a
            inputs.append(fr)
            _, outs = sw.receive(fr)
            for o in outs:
                if job.vlan is not None:
                    o = untag(o)
                r = job.ip.index(o[30:34])
                if rng.random() < p_res_loss:
                    continue
                push(now + rng.uniform(dmin, dmax), "wk", r, o)
        elif kind == "wk":
            w, o = a
            pool = u16(o, 48)
            s, v, tsi = pool & 0x7FFF, pool >> 15, struct.unpack_from("!I", o, 44)[0]
            st = state[w][s]
            if st is None or st[0] != tsi or st[1] != v:
                continue   # stale or duplicate result
            c = st[0]
            got = (list(struct.unpack_from("!%di" % k, o, 52)), s8(o[50]), s8(o[51]))
            assert got == want[c], "closed-loop: wrong result for chunk %d" % c
            done[w] += 1
            nc = c + S
            if nc < chunks:
                start(now, w, s, nc, 1 - v)
            else:
                state[w][s] = None
        elif kind == "timer":
            w, s, g, to = a
            st = state[w][s]
            if st is None or st[3] != g:
                continue
            send(now, w, s, st[2])
            nto = min(to * 2, timeout * 8)
            push(now + nto, "timer", w, s, g, nto)
    assert done == [chunks] * n, done
    return inputs


def sc_mixed(n, payload, slots, chunks, p_loss, p_dup, p_res_loss, vlan=None, vlan_priority=0,
             p_foreign=0.0):
    @scenario(n, payload, slots, vlan=vlan, vlan_priority=vlan_priority)
    def fn(job, tr, rng):
        for fr in closed_loop(job, rng, chunks, p_loss, p_dup, p_res_loss, p_foreign=p_foreign):
            tr.add(fr)
    return fn


@scenario(4, 256, 3)
def sc_fuzz(job, tr, rng):
    """No protocol at all: random valid contributions (random rank, slot, set), retransmissions
    of earlier frames, bad frames from the catalogue, ARP and pings, in random order."""
    cat = bad_catalogue(job)
    sent = []
    for i in range(1500):
        x = rng.random()
        if x < 0.55 or not sent:
            r, s, v = rng.randrange(job.n), rng.randrange(job.slots), rng.randrange(2)
            f = contrib_fields(job, r, s, v, rand_values(rng, job.k, "mix"), e0=rand_exp(rng),
                               e1=rand_exp(rng), tsi=i, job_number=0xF0,
                               dport=0xBEE0 + rng.randrange(16))
            if rng.random() < 0.2:
                label, fl = rng.choice(VALID_FLAVORS)
                f.update(fl(job, f, rng))
            fr = build_contrib(f)
            sent.append(f)
            tr.add(fr)
        elif x < 0.75:
            tr.add(build_contrib(rng.choice(sent)))
        elif x < 0.95:
            t = dict(rng.choice(sent))
            t["pad"] = b""
            if t.get("csum") == 0xFFFF:
                t["csum"] = None
            label, expect, fn = rng.choice(cat)
            tr.add(fn(t, rng), label, expect)
        elif x < 0.975:
            r = rng.randrange(job.n)
            tr.add(arp_frame(BCAST, job.mac[r], spa=job.ip[r], tpa=job.si), None, "arp")
        else:
            r = rng.randrange(job.n)
            tr.add(icmp_echo_frame(job.sm, job.mac[r], job.ip[r], job.si,
                                   bytes(rng.randrange(256) for _ in range(rng.randrange(40)))),
                   None, "icmp")


def vlan_catalogue(job):
    """The frames a tagged job must drop at §1 step 3 (or just before or after it), each with its
    verdict: (label, expected verdict, fn(tmpl_fields, rng) -> the whole frame as sent).
    tmpl_fields is an UNTAGGED field dict (tag None) of a garbage-valued contribution."""
    V, p, sm, si = job.vlan, job.vlan_priority, job.sm, job.si
    other_host_mac = mac("02:00:5a:00:02:63")
    other_host_ip = ipa("192.0.2.99")
    other_vids = sorted({(V + 1) % 4096, (V - 1) % 4096, V ^ 0x800, V ^ 0x001, 0xFFF, 1, 4094}
                        - {V, 0})
    swapped = ((V & 0xFF) << 8) | (V >> 8)

    def raw_tag(tag_bytes, **kw):
        """The contribution with `tag_bytes` inserted after byte 12, then cut or not."""
        def fn(t, rng):
            f = dict(t, tag=None)
            f.update(kw)
            cut = f.pop("cut", None)
            fr = insert_tag(build_contrib(f), tag_bytes) if tag_bytes is not None else build_contrib(f)
            return fr if cut is None else fr[:cut]
        return fn

    def tci(vid, rng):
        return (rng.randrange(8) << 13) | (rng.randrange(2) << 12) | vid

    def tagged(vid_fn=lambda rng: V, tpid=ETH_VLAN, **kw):
        def fn(t, rng):
            return raw_tag(vlan_tag(tci(vid_fn(rng), rng), tpid), **kw)(t, rng)
        return fn

    def arp_req(tag, **kw):
        def fn(t, rng):
            args = dict(eth_dst=BCAST, eth_src=t["eth_src"], spa=t["src_ip"], tpa=si)
            args.update(kw)
            return arp_frame(args.pop("eth_dst"), args.pop("eth_src"),
                             tag=None if tag is None else tag(rng), **args)
        return fn

    def ping(tag, **kw):
        def fn(t, rng):
            args = dict(eth_dst=sm, eth_src=t["eth_src"], src_ip=t["src_ip"], dst_ip=si,
                        data=bytes(rng.randrange(256) for _ in range(12)))
            args.update(kw)
            return icmp_echo_frame(args.pop("eth_dst"), args.pop("eth_src"), args.pop("src_ip"),
                                   args.pop("dst_ip"), args.pop("data"),
                                   tag=None if tag is None else tag(rng), **args)
        return fn

    def good_tag(rng):
        return vlan_tag(tci(V, rng))

    def qinq(outer_tpid, outer_vid, inner_tpid, inner_vid):
        return lambda t, rng: raw_tag(vlan_tag(tci(outer_vid, rng), outer_tpid)
                                      + vlan_tag(tci(inner_vid, rng), inner_tpid))(t, rng)

    cat = [
        # --- wrong_vlan: no tag, another tag, another VID
        ("untagged contribution", "wrong_vlan", raw_tag(None)),
        ("untagged contribution with 4 bytes of padding", "wrong_vlan",
         raw_tag(None, pad=b"\x81\x00\x00\x00")),
        ("priority-tagged (VID 0), PCP = the job's", "wrong_vlan",
         raw_tag(vlan_tag(p << 13))),
        ("priority-tagged (VID 0), PCP 7 DEI 1", "wrong_vlan", raw_tag(vlan_tag(0xF000))),
        ("VID byte-swapped (0x%03x)" % (swapped & 0xFFF), "wrong_vlan",
         raw_tag(vlan_tag(swapped)) if swapped & 0xFFF != V else raw_tag(vlan_tag(V ^ 0x10))),
        ("TCI = V << 4 (VID in the wrong bits)", "wrong_vlan", raw_tag(vlan_tag((V << 4) & 0xFFFF))),
        ("802.1ad S-tag 0x88A8 with VID V, no inner tag", "wrong_vlan", tagged(tpid=ETH_QINQ)),
        ("802.1ad S-tag 0x88A8 VID V, inner C-tag VID V", "wrong_vlan",
         qinq(ETH_QINQ, V, ETH_VLAN, V)),
        ("TPID 0x9100 with VID V", "wrong_vlan", tagged(tpid=ETH_VLAN_OLD)),
        ("TPID 0x9100 VID V, inner C-tag VID V", "wrong_vlan", qinq(ETH_VLAN_OLD, V, ETH_VLAN, V)),
        ("TPID byte-swapped 0x0081 with VID V", "wrong_vlan", tagged(tpid=0x0081)),
        ("TPID 0x8101 with VID V", "wrong_vlan", tagged(tpid=0x8101)),
        ("TPID 0x0800 in the tag position (IPv4 EtherType, then 'VID' V)", "wrong_vlan",
         tagged(tpid=ETH_IPV4)),
        ("untagged ARP request for the switch IP", "wrong_vlan", arp_req(None)),
        ("untagged ARP request, padded to 60", "wrong_vlan", arp_req(None, pad=b"\x00" * 18)),
        ("ARP request priority-tagged (VID 0)", "wrong_vlan",
         arp_req(lambda rng: vlan_tag(rng.randrange(8) << 13))),
        ("ARP request on VID 0xFFF", "wrong_vlan", arp_req(lambda rng: vlan_tag(tci(0xFFF, rng)))),
        ("ARP request with an S-tag VID V", "wrong_vlan",
         arp_req(lambda rng: vlan_tag(tci(V, rng), ETH_QINQ))),
        ("untagged echo request", "wrong_vlan", ping(None)),
        ("echo request on VID V+1", "wrong_vlan", ping(lambda rng: vlan_tag(tci((V + 1) % 4096, rng)))),
        ("16-byte untagged frame", "wrong_vlan", raw_tag(None, cut=16)),
        ("17-byte untagged frame", "wrong_vlan", raw_tag(None, cut=17)),
        ("16-byte frame, C-tag VID V+1", "wrong_vlan", tagged(lambda rng: (V + 1) % 4096, cut=16)),
        ("16-byte frame, priority tag", "wrong_vlan", raw_tag(vlan_tag(0x2000), cut=16)),
        ("17-byte frame, S-tag VID V", "wrong_vlan", tagged(tpid=ETH_QINQ, cut=17)),
        ("untagged, bad IP checksum (VLAN first)", "wrong_vlan", raw_tag(None, csum_delta=1)),
        ("another VID, unknown source (VLAN first)", "wrong_vlan",
         tagged(lambda rng: V ^ 0x800, src_ip=other_host_ip)),
        ("another VID, MF set (VLAN first)", "wrong_vlan", tagged(lambda rng: V ^ 1, flags_frag=0x2000)),
        ("untagged, slot = S (VLAN first)", "wrong_vlan", raw_tag(None, slot=job.slots)),
        # --- step 1 and 2 come before the tag
        ("13-byte frame", "truncated", raw_tag(None, cut=13)),
        ("13-byte frame to another MAC (length first)", "truncated",
         raw_tag(None, cut=13, eth_dst=job.mac[0])),
        ("15-byte frame to another MAC (MAC before the tag)", "wrong_dst_mac",
         tagged(cut=15, eth_dst=job.mac[0])),
        ("untagged, dst MAC of a worker (MAC before the tag)", "wrong_dst_mac",
         raw_tag(None, eth_dst=job.mac[1])),
        ("another VID, dst MAC multicast (MAC before the tag)", "wrong_dst_mac",
         tagged(lambda rng: (V + 1) % 4096, eth_dst=mac("01:00:5e:00:00:01"))),
        ("VID V, dst MAC of another host", "wrong_dst_mac", tagged(eth_dst=other_host_mac)),
        ("ARP request with VID V to another MAC", "wrong_dst_mac",
         arp_req(good_tag, eth_dst=other_host_mac)),
        # --- step 3 length edges
        ("14-byte untagged frame (L < 16 before the TPID)", "truncated", raw_tag(None, cut=14)),
        ("15-byte untagged frame", "truncated", raw_tag(None, cut=15)),
        ("14-byte frame, TPID 0x8100 only", "truncated", tagged(cut=14)),
        ("15-byte frame, TPID and half a TCI", "truncated", tagged(cut=15)),
        ("15-byte frame, TPID 0x88A8", "truncated", tagged(tpid=ETH_QINQ, cut=15)),
        ("16-byte frame, tag of the job (nothing after it)", "truncated", tagged(cut=16)),
        ("17-byte frame, tag of the job", "truncated", tagged(cut=17)),
        ("18-byte frame, tag of the job, EtherType IPv4", "truncated", tagged(cut=18)),
        ("37-byte tagged IPv4 frame (33 after the tag)", "truncated", tagged(cut=37)),
        ("38-byte tagged ICMP echo frame with T=20 (34 untagged)", "truncated",
         ping(good_tag, data=b"", total_length=20, truncate=38)),
        ("18-byte tagged frame, EtherType ARP", "truncated", arp_req(good_tag, truncate=18)),
        ("45-byte tagged ARP request (41 after the tag)", "truncated", arp_req(good_tag, truncate=45)),
        # --- the tag is gone before the later checks: lengths count the untagged frame
        ("tagged, IP total length counts the tag (T + 4, frame unchanged)", "bad_length",
         lambda t, rng: tagged(total_length=20 + 18 + job.payload + 4)(t, rng)),
        ("tagged, last 4 bytes missing", "bad_length",
         lambda t, rng: tagged()(t, rng)[:-4]),
        ("tagged echo request, T counts the tag", "bad_length",
         ping(good_tag, data=b"0123456789ab", total_length=20 + 8 + 12 + 4)),
        ("tag of the job, then a second C-tag VID V", "not_ipv4_udp", qinq(ETH_VLAN, V, ETH_VLAN, V)),
        ("tag of the job, then an S-tag", "not_ipv4_udp", qinq(ETH_VLAN, V, ETH_QINQ, V)),
        ("tag of the job, inner EtherType IPv6", "not_ipv4_udp", tagged(ethertype=ETH_IPV6)),
        ("tag of the job, ARP reply", "not_ipv4_udp", arp_req(good_tag, op=2, eth_dst=sm)),
        ("tag of the job, ARP for another IP", "wrong_dst_ip", arp_req(good_tag, tpa=other_host_ip)),
    ]
    for vid in other_vids:
        cat.append(("contribution on VID %d (job: %d)" % (vid, V), "wrong_vlan",
                    tagged(lambda rng, vid=vid: vid)))
    return cat


@scenario(3, 256, 4, vlan=0xB5A, vlan_priority=5)
def sc_vlan(job, tr, rng):
    """A tagged job: contribution rounds, retransmissions, ARP and pings on the VLAN, all with
    varying PCP and DEI, interleaved with the frames of vlan_catalogue and with the whole
    untagged catalogue carried in the job's tag (each must still be dropped for its reason)."""
    V = job.vlan
    cat = list(vlan_catalogue(job))
    for label, expect, fn in bad_catalogue(job):
        def wrapped(t, rng, fn=fn):
            tag = vlan_tag((rng.randrange(8) << 13) | (rng.randrange(2) << 12) | V)
            return insert_tag(fn(t, rng), tag)
        cat.append(("in the job's tag: " + label, expect, wrapped))
    rng.shuffle(cat)
    host_mac, host_ip = mac("02:00:5a:00:02:63"), ipa("192.0.2.99")
    pcp_i = 0

    def next_tag():
        nonlocal pcp_i
        t = vlan_tag(((pcp_i % 8) << 13) | ((pcp_i // 8 % 2) << 12) | V)
        pcp_i += 1
        return t

    def scrub(t):
        t["tag"] = None

    def add_valid(f, label, rnd, first):
        f["tag"] = next_tag()
        tr.add(build_contrib(f), "valid, tagged: " + label, "contribution")
        if first and rnd % 4 == 0:
            # a duplicate to the incomplete round, other PCP/DEI: silent
            tr.add(build_contrib(dict(f, tag=next_tag())), "duplicate, round incomplete", "duplicate")

    def after_round(rnd, sent):
        # retransmissions to the complete round, with another PCP/DEI than the original
        if rnd % 2 == 1:
            tr.add(build_contrib(dict(sent[rnd % 3], tag=next_tag())),
                   "retransmission to a complete round, other PCP", "duplicate")
        # ARP and pings on the VLAN, tagged, with or without padding (to 60 and to 64 bytes)
        w = rng.randrange(job.n)
        # (the padding never makes a frame longer than 1518 bytes, 1522 with the FCS)
        pad = [b"", b"\x00" * 14, b"\x00" * 18, bytes(rng.randrange(256) for _ in range(30))][rnd % 4]
        if rnd % 2 == 0:
            src_m, src_i = (job.mac[w], job.ip[w]) if rnd % 6 else (host_mac, host_ip)
            tr.add(arp_frame(BCAST if rnd % 4 else job.sm, src_m, spa=src_i, tpa=job.si,
                             tag=next_tag(), pad=pad), "tagged ARP request", "arp")
        else:
            dl = [0, 1, 17, 18, 32, 56, 99, 1472][(rnd // 2) % 8]
            if dl > 1000:
                pad = b""
            tr.add(icmp_echo_frame(job.sm if rnd % 5 else BCAST, job.mac[w], job.ip[w], job.si,
                                   bytes(rng.randrange(256) for _ in range(dl)),
                                   ident=rng.randrange(65536), seq=rnd,
                                   ip_ident=rng.randrange(65536), tos=rng.choice([0, 0xB8]),
                                   tag=next_tag(), pad=pad), "tagged echo request", "icmp")

    catalogue_rounds(job, tr, rng, cat, 0x200, 0x5A, scrub, add_valid, after_round)


@scenario(3, payload=256, slots=4, parent=("192.0.2.100", "02:00:5a:00:00:64", 0xBEE5, 2), tree_workers=12)
def sc_tree(job, tr, rng):
    """docs/switch.md §6: a leaf of 3 workers with a parent. Rounds in random order with
    retransmissions before completion (dropped), while waiting for the parent (rank 0's sends
    the partial up again, another rank's is only counted) and after (the stored parent result to
    the sender); the parent's results, some
    twice (stale), some before the round completes (stale); a parent frame of the wrong size."""
    sets = [0] * job.slots

    def from_parent(s, v, values, e=(0, 0), size=None):
        f = contrib_fields(job, 0, s, v, values, e0=e[0], e1=e[1], tsi=rng.getrandbits(32))
        f["src_ip"], f["src_mac"], f["sport"] = job.pi, job.pm, job.pp
        if size is not None:
            f["size"] = size
        return build_contrib(f)

    for rnd in range(6):
        for s in range(job.slots):
            v = sets[s]
            sets[s] ^= 1
            vals = [rand_values(rng, job.k) for _ in range(job.n)]
            exps = [(rand_exp(rng), rand_exp(rng)) for _ in range(job.n)]
            order = list(range(job.n))
            rng.shuffle(order)
            tsi = rng.getrandbits(32)
            cs = {r: contribution(job, r, s, v, vals[r], e0=exps[r][0], e1=exps[r][1], tsi=tsi)
                  for r in range(job.n)}
            if rng.random() < 0.3:
                tr.add(from_parent(s, v, rand_values(rng, job.k)), "parent result too early", V_PARENT_STALE)
            for i, r in enumerate(order):
                tr.add(cs[r], "contribution r%d s%d v%d" % (r, s, v), V_CONTRIB)
                if i == 0 and rng.random() < 0.5:
                    tr.add(cs[r], "retransmission before completion", V_DUP)
            for _ in range(rng.randrange(3)):
                tr.add(cs[rng.randrange(job.n)], "retransmission while waiting", V_DUP)
            if rng.random() < 0.2:
                tr.add(from_parent(s, v, rand_values(rng, job.k), size=3), "parent frame of size 1024", "bad_size")
            res = from_parent(s, v, rand_values(rng, job.k), e=(rand_exp(rng), rand_exp(rng)))
            tr.add(res, "parent result", V_PARENT)
            if rng.random() < 0.3:
                tr.add(res, "parent result again", V_PARENT_STALE)
            if rng.random() < 0.5:
                tr.add(cs[rng.randrange(job.n)], "retransmission after the parent's result", V_DUP)


SCENARIOS = [
    ("malformed", sc_malformed),
    ("arp", sc_arp),
    ("ping", sc_ping),
    ("duplicates", sc_duplicates),
    ("n1", sc_n1),
    # n2 and n3 use other switch addresses and worker tables whose addresses are neither
    # contiguous nor ascending with the rank (the rank comes from the table, not the address)
    ("n2", sc_nx(2, 8, 6, 0.15, addr=dict(
        switch_mac="06:1a:2b:3c:4d:5e", switch_ip="10.11.12.1",
        workers=[("10.11.12.200", "06:1a:2b:00:00:c8"), ("10.11.12.7", "06:1a:2b:00:00:07")]))),
    ("n3", sc_nx(3, 16, 4, 0.10, addr=dict(
        workers=[("192.0.2.30", "02:00:5a:00:01:1e"), ("198.51.100.5", "02:00:5a:00:01:05"),
                 ("192.0.2.10", "02:00:5a:00:01:0a")]))),
    ("n32", sc_nx(32, 16, 3, 0.03)),
    ("p1024", sc_nx(4, 8, 4, 0.10, payload=1024)),
    ("wrap", sc_wrap),
    ("session", sc_session),
    ("mixed", sc_mixed(5, 256, 8, 96, 0.10, 0.05, 0.10)),
    ("mixed1024", sc_mixed(3, 1024, 4, 48, 0.10, 0.05, 0.10)),
    ("fuzz", sc_fuzz),
    ("csum_alias", sc_csum_alias),
    ("vlan", sc_vlan),
    # the closed loop of mixed1024 on a tagged job; 10 % of the transmissions also leave a copy
    # with garbage values outside the job's VLAN (untagged, VID 0, another VID, an S-tag)
    ("vlan_mixed", sc_mixed(3, 1024, 4, 48, 0.10, 0.05, 0.10, vlan=4094, vlan_priority=3,
                            p_foreign=0.10)),
    ("tree", sc_tree),
    # SwitchML's DPDK workers: their worker threads' ports, with and without their zero checksums
    ("switchml", sc_switchml(True)),
    ("switchml_ports", sc_switchml(False)),
    # 16-bit lanes (docs/switch.md §9; the reference only: the core has none yet)
    ("lanes16", sc_lanes16),
]


# --------------------------------------------------------------------------------------------
# checks of the produced traces (of this tool itself, not of the switch)

def check_output_frame(job, fr):
    """Every emitted frame: well-formed, IPv4 checksum verifies, ICMP checksum verifies when the
    request's did.  A tagged job's frames carry exactly the tag 0x8100, TCI = p << 13 | V."""
    if job.vlan is not None:
        assert len(fr) >= 16 and u16(fr, 12) == ETH_VLAN and u16(fr, 14) == job.tci, fr[:16].hex()
        fr = untag(fr)
    et = u16(fr, 12)
    assert fr[6:12] == job.sm
    if et == ETH_ARP:
        assert len(fr) == 42
        return
    assert et == ETH_IPV4
    assert fr[14] == 0x45 and ones_sum(fr[14:34]) == 0xFFFF
    assert 14 + u16(fr, 16) == len(fr)
    if fr[23] == 17:
        assert len(fr) == 52 + job.payload and u16(fr, 38) == 18 + job.payload


def run_model(job, frames):
    sw = Switch(job)
    verdicts, outs = [], []
    for i, fr in enumerate(frames):
        v, o = sw.receive(fr)
        verdicts.append(v)
        for x in o:
            outs.append((i, x))
    return sw, verdicts, outs


def self_check(name, job, tr, sw, verdicts, outs):
    c = sw.ctr
    for idx, label, expect in tr.notes:
        if expect is not None and verdicts[idx] != expect:
            raise AssertionError("%s: frame %d (%s): model says %s, scenario meant %s"
                                 % (name, idx, label, verdicts[idx], expect))
    total = c["contributions"] + c["duplicates"] + c["arp_replies"] + c["icmp_replies"] + \
        sum(c[r] for r in DROP_REASONS)
    parent_in = sum(1 for v in verdicts if v in (V_PARENT, V_PARENT_STALE))
    partials = sum(1 for _, fr in outs if sw._is_partial(fr))
    assert total == c["frames_in"] == len(tr.frames) - parent_in
    assert c["frames_out"] == len(outs) - partials == c["results_multicast"] + \
        c["results_retransmitted"] + c["arp_replies"] + c["icmp_replies"]
    t = sw.tree
    assert parent_in == t["parent_results"] + t["parent_results_stale"]
    assert partials == t["partials_up"] + t["partials_resent"]
    if name == "tree":
        assert min(t.values()) > 0, t
    for _, fr in outs:
        check_output_frame(job, fr)
    # the n results of one round are the same frame but for the addresses (dst MAC, dst IP and
    # so the IP checksum); in particular they carry the same tag whatever the trigger's PCP
    groups = {}
    for i, fr in outs:
        groups.setdefault(i, []).append(fr)
    for i, frs in groups.items():
        if len(frs) > 1:
            masked = []
            for fr in frs:
                b = bytearray(fr)
                o = 0 if job.vlan is None else 4
                b[0:6] = bytes(6)
                b[o + 24:o + 26] = bytes(2)
                b[o + 30:o + 34] = bytes(4)
                masked.append(bytes(b))
            assert len(set(masked)) == 1, (name, i)
    if name in ("malformed", "vlan"):
        # §1 step 3 only runs for a tagged job: an untagged job cannot drop as wrong_vlan
        # stale_session and lane_mismatch depend on the session and the slot's state (the
        # session and lanes16 scenarios)
        state = ("stale_session", "lane_mismatch")
        reasons = [r for r in DROP_REASONS if r not in state] if job.vlan is not None else \
            [r for r in DROP_REASONS if r not in ("wrong_vlan",) + state]
        missing = [r for r in reasons if c[r] == 0]
        assert not missing, "%s must hit every drop reason%s; missed %s" % (
            name, "" if job.vlan is not None else " but wrong_vlan (untagged job)", missing)
    if job.vlan is None:
        assert c["wrong_vlan"] == 0, name
    # valid ICMP requests (checksum correct) must get replies whose checksum verifies
    for i, fr in outs:
        q = tr.frames[i]
        if job.vlan is not None:
            fr, q = untag(fr), untag(q)
        if u16(fr, 12) == ETH_IPV4 and fr[23] == 1:
            t = u16(q, 16)
            if ones_sum(q[34:14 + t]) == 0xFFFF:
                assert ones_sum(fr[34:]) == 0xFFFF, (name, i)


# --------------------------------------------------------------------------------------------

def write_scenario(out_dir, name, job, frames, sw, outs):
    with open(os.path.join(out_dir, name + ".toml"), "w") as fh:
        fh.write(job.toml())
    with open(os.path.join(out_dir, name + ".in.pcap"), "wb") as fh:
        fh.write(pcap_bytes([(i, fr) for i, fr in enumerate(frames)]))
    with open(os.path.join(out_dir, name + ".expected.pcap"), "wb") as fh:
        fh.write(pcap_bytes(outs))
    with open(os.path.join(out_dir, name + ".counters.json"), "w") as fh:
        json.dump({k: sw.ctr[k] for k in COUNTERS}, fh, indent=2)
        fh.write("\n")


def compare(expected, actual):
    a = read_pcap(expected)
    b = read_pcap(actual)
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            print("frame count differs: expected %d, actual %d" % (len(a), len(b)))
            return 1
        x, y = a[i][1], b[i][1]
        if x != y:
            off = next((j for j in range(min(len(x), len(y))) if x[j] != y[j]), min(len(x), len(y)))
            print("frame %d differs (lengths %d / %d), first at byte %d:" % (i, len(x), len(y), off))
            lo = max(0, off - 8)
            print("  expected %s" % x[lo:off + 16].hex(" "))
            print("  actual   %s" % y[lo:off + 16].hex(" "))
            return 1
    print("identical: %d frames" % len(a))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--only", nargs="*", help="scenario names")
    ap.add_argument("--list", action="store_true", help="list the scenarios")
    ap.add_argument("--check", action="store_true",
                    help="also read the written pcaps back and replay them through the model")
    ap.add_argument("--compare", nargs=2, metavar=("EXPECTED", "ACTUAL"),
                    help="compare two pcaps frame by frame")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    if a.compare:
        return compare(*a.compare)
    if a.list:
        for name, _ in SCENARIOS:
            print(name)
        return 0
    if not a.out:
        ap.error("--out is required")
    os.makedirs(a.out, exist_ok=True)
    names = [n for n, _ in SCENARIOS]
    for n in a.only or []:
        if n not in names:
            ap.error("unknown scenario %r (have: %s)" % (n, ", ".join(names)))
    for name, fn in SCENARIOS:
        if a.only and name not in a.only:
            continue
        rng = random.Random("%d:%s" % (a.seed, name))
        job, tr = fn(rng)
        sw, verdicts, outs = run_model(job, tr.frames)
        self_check(name, job, tr, sw, verdicts, outs)
        write_scenario(a.out, name, job, tr.frames, sw, outs)
        if a.check:
            back = [fr for _, fr in read_pcap(os.path.join(a.out, name + ".in.pcap"))]
            assert back == tr.frames
            sw2, _, outs2 = run_model(job, back)
            exp = [fr for _, fr in read_pcap(os.path.join(a.out, name + ".expected.pcap"))]
            assert exp == [x for _, x in outs2] and sw2.ctr == sw.ctr
        if not a.quiet:
            c = sw.ctr
            drops = sum(c[r] for r in DROP_REASONS)
            print("%-11s n=%-2d P=%-4d S=%-2d in=%-5d out=%-5d contrib=%-5d dup=%-4d "
                  "mcast=%-5d retx=%-4d arp=%-3d icmp=%-3d dropped=%d"
                  % (name, job.n, job.payload, job.slots, c["frames_in"], c["frames_out"],
                     c["contributions"], c["duplicates"], c["results_multicast"],
                     c["results_retransmitted"], c["arp_replies"], c["icmp_replies"], drops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
