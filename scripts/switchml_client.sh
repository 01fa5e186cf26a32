#!/usr/bin/env bash
# SwitchML's own C++ client library (p4lang/p4app-switchML, DPDK backend) against
# `spotagg switch --controller`: SwitchML's hello_world on N workers (default 2) registers
# through our gRPC controller and all-reduces through the software switch, each worker
# verifying its result (docs/controller.md §8).
#
#   scripts/switchml_client.sh            (as root; Debian 12)
#
# KNOWN ISSUE (not yet a test): PASS every time on an idle 2-core machine (8 of 8 runs with the
# defaults), but with other work on the machine (load average 4-11) SwitchML's hello_world
# often fails its own check ("Failed to verify output data. Element 256 in tensor 0 was
# 0.000000e+00 but we expected 5.120000e+02"; values off by powers of two, or 0), with 1 thread
# too, while the switch counts every contribution and no drop. The failures come with many
# retransmissions (duplicates 3000-10000 against ~2000 when it passes); the cause (SwitchML's
# exponent-then-data rounds under retransmission against our switch's duplicate handling, or
# reordering on the TAP/tc path) is not found yet. With SwitchML's timeout = 100 (ms, not its default 10)
# it passed 2 of 2 under load 5-6.
#
# On a 2-core machine: the build 35-50 s (once; SWITCHML_REBUILD=1 forces it), a run about 25 s
# (EAL start, 2 × 4 busy-polling lcores on 2 CPUs, the switch's 15 s idle exit); 8 tensors of
# 32768 floats per worker = 4096 contributions, with 2000-3000 duplicates (SwitchML's 10 ms
# retransmission timeout on oversubscribed CPUs) and no drops.
#
# Exit status 0 and a last line PASS when every worker printed "Data verified successfully";
# otherwise FAIL (the workers' and the switch's logs are printed either way).
#
# What it does:
#   1. apt-get installs what is missing: libdpdk-dev (Debian's DPDK 22.11), libgrpc++-dev,
#      protobuf-compiler(-grpc), libprotobuf-dev, libgoogle-glog-dev, libgflags-dev,
#      libboost-program-options-dev, pkg-config, iproute2, gcc/g++.
#   2. Extracts SwitchML's dev_root from the mirror ($SWITCHML_MIRROR, a bare git repository;
#      default /work/.mirror/p4lang+p4app-switchML/repo) into target/switchml/src (ignored by
#      git: SwitchML's code is built there, never copied into the tree) and builds
#      libswitchml-client.a and hello_world into target/switchml/build with plain g++ (two jobs,
#      nice). SwitchML's Makefile is not used: with DPDK=1 it includes DPDK's legacy make system
#      (mk/rte.vars.mk), which DPDK 22.11 no longer ships. The flags are the Makefile's for
#      `DPDK=1` with its defaults: -O3 -DNDEBUG, TIMEOUTS=1 (-DTIMEOUTS, timeouts.cfg),
#      DUMMY=1 (-DDUMMY, dummy.cfg), DPDK=1 (-DDPDK, dpdk.cfg, gRPC), except VCL=0 (the vector
#      class library is a git submodule the mirror does not hold; it only speeds up
#      the quantizer). protoc/grpc_cpp_plugin generate switchml.pb/grpc.pb from protos/.
#      switchml.cfg is general.cfg + timeouts.cfg + dummy.cfg + dpdk.cfg, as the Makefile does.
#   3. Edits of the build copy (sed), none of them in this repository:
#        DPDK 20.x → 22.11 renames (backends/dpdk):
#          DEV_RX_OFFLOAD_* / DEV_TX_OFFLOAD_*  → RTE_ETH_RX_OFFLOAD_* / RTE_ETH_TX_OFFLOAD_*
#          ETH_LINK_FULL_DUPLEX                 → RTE_ETH_LINK_FULL_DUPLEX
#          ETH_MQ_*                             → RTE_ETH_MQ_*
#          PKT_TX_IPV4, PKT_TX_IP_CKSUM, PKT_TX_UDP_CKSUM → RTE_MBUF_F_TX_*
#          rte_ether_hdr's s_addr / d_addr      → src_addr / dst_addr
#          RTE_LCORE_FOREACH_SLAVE              → RTE_LCORE_FOREACH_WORKER
#        two deletions, NOT renames (the fields are gone from 22.11's ethdev API):
#          `rxm.split_hdr_size = 0;`           (rte_eth_rxmode has no split_hdr_size; 0 was
#                                                its default anyway)
#          `port_conf.fdir_conf.* = ...;` (4 lines: rte_eth_conf has no fdir_conf; flow
#                                                director settings, which the TAP PMD ignores)
#        glog: glog_fix.h's INIT_LOG() calls google::glog_internal_namespace_::
#          IsGoogleLoggingInitialized(), which Debian's glog 0.6 no longer exports; it calls
#          the public google::IsGoogleLoggingInitialized() instead (a link error otherwise).
#   4. Network (all inside namespaces, addresses 10.77.0.x only there):
#        smlsw:  bridge br0, 10.77.0.1/24, MAC 02:77:00:00:00:01; `spotagg switch --controller
#                10.77.0.1:50099 --bind 10.77.0.1:48864 --switch-mac 02:77:00:00:00:01`.
#        smlwI:  hello_world (rank I) with DPDK on a TAP device (`--no-huge --no-pci
#                --vdev=net_tap0,iface=dtap0,mac=02:77:00:00:02:0(I+1)`), its worker_ip
#                10.77.0.(21+I); a veth smleI to br0 carries the SAME IPv4 and MAC in the
#                kernel, for SwitchML's gRPC client, which uses the kernel's sockets (when
#                this script was written the controller took only a registration of the gRPC
#                peer's own address; since ed9d295's successor, an address inside `--allow`
#                is taken too, docs/controller.md §5, so the shared address is no longer
#                needed, only kept). tc (u32 + mirred, which this kernel
#                has; it has no flower/multiq/skbedit) splits the traffic: every frame the DPDK
#                process writes (dtap0's ingress) leaves by smleI; UDP arriving on smleI goes to
#                dtap0 (the DPDK process), everything else (ARP, gRPC/TCP) to the kernel, which
#                answers ARP for the worker's address with the DPDK port's MAC.
#        The TAP PMD offers TX IPv4/UDP checksum offload and computes the checksums in
#        software, so the kernel of smlsw accepts the frames (it drops IPv4 headers with a zero
#        checksum, docs/switch.md §1 6.4). Its rte_flow rules (SwitchML steers thread t's port
#        4000+t to queue t) need multiq/flower, so they fail ("Kernel refused TC filter rule
#        creation") and SwitchML logs and goes on; the tun driver's own flow steering returns
#        each reply to the queue its flow was sent from, so thread t gets its replies.
#   5. SwitchML's configuration: its defaults (num_worker_threads 4, max_outstanding_packets 256,
#      packet_numel 256 = MTU_1024, prepostprocessor cpu_exponent_quantizer, timeouts 10 ms,
#      worker_port 4000, pool_size 131072, bursts) except: rank, num_workers = N, backend = dpdk,
#      controller_ip = 10.77.0.1 (port 50099 is SwitchML's default), worker_ip, cores = 0-3,
#      extra_eal_options (the TAP vdev, `--no-huge -m 4608` (4 threads × 2 pools × 131072 mbufs
#      need ~2.7 GB; 2 workers use ~9 GB), `--no-pci`, `--no-telemetry`, `--file-prefix`).
#      4 lcores on a 2-CPU machine: SwitchML passes `-l <cores>` to the EAL, and -l takes only
#      CPUs that exist; an LD_PRELOAD shim built here (lcores_shim.so, 10 lines of ours) wraps
#      rte_eal_init and turns `-l 0-3` into `--lcores (0-3)@(0-<ncpu-1>)` (4 lcores floating
#      on all CPUs). SwitchML's code is unchanged by it.
#   6. Our switch's options: `--allow 10.77.0.0/24` (SwitchML's client sends no token),
#      `--slots-per-session 512`: with m = max_outstanding_packets / T outstanding packets a
#      thread, SwitchML's thread t uses slots 2m·t .. 2m·t + m − 1 (PktId2PoolIndex: a pool of
#      2m indices a thread, the upper m sent as set 1), so a job needs m(2T − 1) slots: 448 with
#      the defaults (T = 4, m = 64), 256 with one thread; 512 covers every T. With our default of
#      64 the frames of higher slots are bad_slot drops and SwitchML ends with zeros in its
#      results or times out (seen, T = 4: bad_slot=15475; T = 1: bad_slot=60859; 447 slots:
#      bad_slot=54 and "Failed to verify output data"). 512 is now the switch's default. `--worker-port` and
#      `--worker-ports` keep their defaults (4000, 16). `--stats-every 5` and
#      `--exit-after-idle 15` print the counters.
#   7. Cleans up (processes it started, by pid; namespaces) on exit, failure or signal.
#
# Environment: SWITCHML_N (workers, default 2), SWITCHML_THREADS (default 4, SwitchML's),
# SWITCHML_SLOTS (--slots-per-session, default 512), SWITCHML_LIMIT (seconds a worker may run,
# default 120), SWITCHML_ROUNDS (hello_world runs one after another on the same switch, each a new
# SwitchML session that replaces the last: default 1), SWITCHML_MEM (EAL -m, MB, default 4608), SWITCHML_REBUILD=1 (rebuild even when
# target/switchml/build/bin/hello_world exists), SPOTAGG_BIN (default target/debug/spotagg,
# built with `cargo build` when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$ROOT/target/switchml
MIRROR=${SWITCHML_MIRROR:-/work/.mirror/p4lang+p4app-switchML/repo}
N=${SWITCHML_N:-2}
THREADS=${SWITCHML_THREADS:-4}
SLOTS=${SWITCHML_SLOTS:-512}
LIMIT=${SWITCHML_LIMIT:-120}
ROUNDS=${SWITCHML_ROUNDS:-1}
MEM=${SWITCHML_MEM:-4608}
BIN=${SPOTAGG_BIN:-$ROOT/target/debug/spotagg}
P=sml
SW=${P}sw

[ "$(id -u)" = 0 ] || { echo "switchml_client.sh: run as root (namespaces, apt-get)"; exit 2; }
[ "$N" -ge 1 ] && [ "$N" -le 9 ] || { echo "SWITCHML_N must be 1..9"; exit 2; }

# ---- 1. packages -----------------------------------------------------------------------------
PKGS="libdpdk-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
      libgoogle-glog-dev libgflags-dev libboost-program-options-dev pkg-config iproute2 gcc g++"
missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"; done)
if [ -n "$missing" ]; then
    echo "== apt-get install" $missing
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

# ---- 2./3. build -----------------------------------------------------------------------------
build() {
    local start=$SECONDS S
    rm -rf "$T/src" "$T/build"
    mkdir -p "$T/src" "$T/build/obj" "$T/build/bin"
    git -C "$MIRROR" archive HEAD dev_root | tar -x -C "$T/src"
    S=$T/src/dev_root/client_lib/src
    find "$S/backends/dpdk" \( -name '*.cc' -o -name '*.h' -o -name '*.inc' \) -print0 | xargs -0 sed -i \
        -e 's/\bDEV_\([RT]X_OFFLOAD_\)/RTE_ETH_\1/g' \
        -e 's/\bETH_LINK_FULL_DUPLEX\b/RTE_ETH_LINK_FULL_DUPLEX/g' \
        -e 's/\bETH_MQ_/RTE_ETH_MQ_/g' \
        -e 's/\bPKT_TX_\(IPV4\|IP_CKSUM\|UDP_CKSUM\)\b/RTE_MBUF_F_TX_\1/g' \
        -e 's/->s_addr\.addr_bytes/->src_addr.addr_bytes/g; s/->d_addr\.addr_bytes/->dst_addr.addr_bytes/g' \
        -e 's/\bRTE_LCORE_FOREACH_SLAVE\b/RTE_LCORE_FOREACH_WORKER/g' \
        -e '/rxm\.split_hdr_size = 0;/d' \
        -e '/^ *port_conf\.fdir_conf\./d'
    sed -i 's/if(!google::glog_internal_namespace_::IsGoogleLoggingInitialized())/if(!google::IsGoogleLoggingInitialized())/' "$S/glog_fix.h"
    protoc -I "$T/src/dev_root/protos" --cpp_out="$S" --grpc_out="$S" \
        --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" "$T/src/dev_root/protos/switchml.proto"
    local -a FLAGS=(-std=c++17 -fPIC -DNDEBUG -O3 -DTIMEOUTS -DDUMMY -DDPDK
        "-DVERSION_INFO=\"p4app-switchML $(git -C "$MIRROR" rev-parse HEAD), built by spotagg scripts/switchml_client.sh\""
        $(pkg-config --cflags libdpdk grpc++ protobuf)
        -I "$S" -I "$S/prepostprocessors" -I "$S/schedulers" -I "$S/backends/dummy" -I "$S/backends/dpdk")
    local f n=0 fail=0
    for f in $(find "$S" "$S/prepostprocessors" "$S/schedulers" "$S/backends/dummy" "$S/backends/dpdk" \
                    -maxdepth 1 -name '*.cc' | sort -u); do
        nice g++ "${FLAGS[@]}" -c "$f" -o "$T/build/obj/$(basename "$f" .cc).o" &
        n=$((n + 1))
        if [ $n -ge 2 ]; then wait -n || fail=1; n=$((n - 1)); fi
    done
    while [ $n -gt 0 ]; do wait -n || fail=1; n=$((n - 1)); done
    [ $fail = 0 ] || { echo "switchml_client.sh: compiling SwitchML's client failed"; return 1; }
    ar rcs "$T/build/libswitchml-client.a" "$T/build/obj/"*.o
    (cd "$S" && find . -name '*.h' | while read -r h; do
        mkdir -p "$T/build/include/switchml/$(dirname "$h")"; cp "$h" "$T/build/include/switchml/$h"; done)
    nice g++ -std=c++17 -O3 -DNDEBUG -I "$T/build/include" "$T/src/dev_root/examples/hello_world/main.cc" \
        -o "$T/build/bin/hello_world" -L"$T/build" -lswitchml-client \
        $(pkg-config --libs libdpdk grpc++ protobuf) -lglog -lgflags -lboost_program_options -lpthread
    cat "$S/configs/general.cfg" "$S/configs/timeouts.cfg" "$S/configs/dummy.cfg" "$S/configs/dpdk.cfg" \
        > "$T/build/switchml.cfg"
    # the lcore shim (step 5 above): ours, not SwitchML's
    gcc -shared -fPIC -O2 -o "$T/build/lcores_shim.so" -x c - -ldl <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
/* SwitchML passes "-l <cores>"; turn it into "--lcores <SPOTAGG_EAL_LCORES>" when that is set */
int rte_eal_init(int argc, char **argv) {
    int (*real)(int, char **) = (int (*)(int, char **))dlsym(RTLD_NEXT, "rte_eal_init");
    const char *m = getenv("SPOTAGG_EAL_LCORES");
    if (m)
        for (int i = 0; i + 1 < argc; i++)
            if (!strcmp(argv[i], "-l")) { argv[i] = "--lcores"; argv[i + 1] = (char *)m; break; }
    return real(argc, argv);
}
C
    echo "== built SwitchML's client and hello_world in $((SECONDS - start)) s"
}
mkdir -p "$T"
if [ "${SWITCHML_REBUILD:-0}" = 1 ] || [ ! -x "$T/build/bin/hello_world" ] || [ ! -f "$T/build/lcores_shim.so" ]; then
    echo "== building SwitchML's client library and hello_world (log: $T/build.log)"
    if ! build >"$T/build.log" 2>&1; then grep -m 20 'error' "$T/build.log"; echo "FAIL (build)"; exit 1; fi
    tail -1 "$T/build.log"
fi
if [ ! -x "$BIN" ]; then (cd "$ROOT" && nice cargo build); fi

# ---- 4.-7. run -------------------------------------------------------------------------------
RUN=$T/run
rm -rf "$RUN"; mkdir -p "$RUN"
PIDS=()
cleanup() {
    set +e
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for i in $(seq 0 $((N - 1))); do ip netns del ${P}w$i 2>/dev/null; done
    ip netns del $SW 2>/dev/null
    for i in $(seq 0 $((N - 1))); do rm -rf /var/run/dpdk/${P}w$i; done   # EAL's --file-prefix runtime dirs
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup

ip netns add $SW
ip -n $SW link set lo up
ip netns exec $SW sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip -n $SW link add br0 type bridge
ip -n $SW link set br0 address 02:77:00:00:00:01
ip -n $SW addr add 10.77.0.1/24 dev br0
ip -n $SW link set br0 up
NCPU=$(nproc)
for i in $(seq 0 $((N - 1))); do
    ns=${P}w$i mac=02:77:00:00:02:0$((1 + i)) ip4=10.77.0.$((21 + i))
    ip netns add $ns
    ip -n $ns link set lo up
    ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip link add ${P}e$i type veth peer name ${P}s$i
    ip link set ${P}e$i netns $ns
    ip link set ${P}s$i netns $SW
    ip -n $SW link set ${P}s$i master br0 up
    ip -n $ns link set ${P}e$i address $mac
    ip -n $ns addr add $ip4/24 dev ${P}e$i
    ip -n $ns link set ${P}e$i up
    ip netns exec $ns tc qdisc add dev ${P}e$i ingress
    mkdir -p "$RUN/w$i"
    sed -e "s/^rank = .*/rank = $i/" \
        -e "s/^num_workers = .*/num_workers = $N/" \
        -e "s/^num_worker_threads = .*/num_worker_threads = $THREADS/" \
        -e "s/^backend = .*/backend = dpdk/" \
        -e "s/^controller_ip = .*/controller_ip = 10.77.0.1/" \
        -e "s/^worker_ip = .*/worker_ip = $ip4/" \
        -e "s/^cores = .*/cores = 0-$((THREADS - 1))/" \
        -e "s|^extra_eal_options = .*|extra_eal_options = --no-huge -m $MEM --no-pci --no-telemetry --file-prefix=${P}w$i --vdev=net_tap0,iface=dtap0,mac=$mac|" \
        "$T/build/switchml.cfg" > "$RUN/w$i/switchml.cfg"
done

ip netns exec $SW timeout $((ROUNDS * LIMIT + 30)) "$BIN" switch --controller 10.77.0.1:50099 \
    --bind 10.77.0.1:48864 --switch-mac 02:77:00:00:00:01 --allow 10.77.0.0/24 \
    --slots-per-session "$SLOTS" --stats-every 5 --exit-after-idle 15 \
    >"$RUN/switch.out" 2>"$RUN/switch.err" &
PIDS+=($!)
SWPID=$!
for k in $(seq 1 100); do   # the controller's port
    ip netns exec $SW bash -c 'exec 3<>/dev/tcp/10.77.0.1/50099' 2>/dev/null && break
    sleep 0.1
done

rc=0
for round in $(seq 1 "$ROUNDS"); do
    WPIDS=()
    for i in $(seq 0 $((N - 1))); do   # the last round's TAP device is gone
        for k in $(seq 1 100); do ip -n ${P}w$i link show dtap0 >/dev/null 2>&1 || break; sleep 0.1; done
    done
    for i in $(seq 0 $((N - 1))); do
        # SwitchML reads ./switchml.cfg
        (cd "$RUN/w$i" && exec ip netns exec ${P}w$i env SPOTAGG_EAL_LCORES="(0-$((THREADS - 1)))@(0-$((NCPU - 1)))" \
            LD_PRELOAD="$T/build/lcores_shim.so" GLOG_logtostderr=1 \
            timeout "$LIMIT" "$T/build/bin/hello_world" >"$RUN/w$i/out$round" 2>"$RUN/w$i/err$round") &
        PIDS+=($!); WPIDS+=($!)
        # while the worker runs, keep dtap0 joined to smleI: its frames out by smleI, UDP from smleI
        # into it. The TAP PMD creates dtap0 and later (re)creates its ingress qdisc while it tries
        # its rte_flow rules, which removes filters put there before; so the watcher checks every
        # 0.2 s and (re)installs them when missing. Frames flow only after every worker has
        # registered, seconds after dtap0 comes up; SwitchML retransmits what is lost before.
        wpid=$!
        (n=0
        for k in $(seq 1 $((LIMIT * 5))); do
            kill -0 $wpid 2>/dev/null || break
            if ip -n ${P}w$i link show dtap0 2>/dev/null | grep -q ',UP' &&
               ! ip netns exec ${P}w$i tc filter show dev dtap0 parent ffff: 2>/dev/null | grep -q mirred; then
                ip netns exec ${P}w$i tc filter del dev ${P}e$i parent ffff: 2>/dev/null
                ip netns exec ${P}w$i tc qdisc add dev dtap0 ingress 2>/dev/null
                ip netns exec ${P}w$i tc filter add dev dtap0 parent ffff: prio 1 u32 match u32 0 0 \
                    action mirred egress redirect dev ${P}e$i &&
                ip netns exec ${P}w$i tc filter add dev ${P}e$i parent ffff: protocol ip prio 1 \
                    u32 match ip protocol 17 0xff action mirred egress redirect dev dtap0 &&
                n=$((n + 1)) && echo "dtap0 joined to ${P}e$i at $((k / 5)).$((k % 5 * 2)) s (time $n)" >>"$RUN/w$i/tap$round"
            fi
            sleep 0.2
        done
        [ $n -gt 0 ] || echo "dtap0 never came up" >>"$RUN/w$i/tap$round") &
        PIDS+=($!)
    done

    for i in $(seq 0 $((N - 1))); do
        r=0; wait "${WPIDS[$i]}" || r=$?
        echo "== round $round, worker $i: exit status $r$([ $r = 124 ] && echo ' (timed out)')"
        cat "$RUN/w$i/tap$round" 2>/dev/null || true
        cat "$RUN/w$i/out$round"
        # glog's warnings, errors and fatal lines (the TAP PMD's refused tc flow rules, once)
        grep -E '^[WEF][0-9]{8} |Check failed' "$RUN/w$i/err$round" | tail -8 || true
        grep -m1 'Kernel refused TC filter rule creation' "$RUN/w$i/err$round" || true
        grep -q "Data verified successfully" "$RUN/w$i/out$round" && [ $r = 0 ] || rc=1
    done
done
wait $SWPID || true
echo "== switch"
cat "$RUN/switch.out"
grep -v '^spotagg switch: frames_in=' "$RUN/switch.err" || true
# no exit line (the switch was killed): the last periodic one
grep -q 'frames_in=' "$RUN/switch.out" || grep '^spotagg switch: frames_in=' "$RUN/switch.err" | tail -1 || true
if [ $rc = 0 ]; then echo PASS; else echo FAIL; fi
exit $rc
