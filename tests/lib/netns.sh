# SPDX-License-Identifier: MIT
# Two real network namespaces joined by a veth pair, for two-node gates on
# one machine (DESIGN.md, "Two nodes, many nodes").  POSIX sh: source it
# from bats (load lib/netns.sh) or from a pipeline.  Needs root and iproute2.
#
#   kvg_netns_up A B [RATE]   create namespaces A and B, veth A<->B with
#                             10.199.0.1/30 in A and 10.199.0.2/30 in B,
#                             optionally shaped to RATE (tc tbf, both ways)
#   kvg_netns_shape RATE      reshape both ends (RATE "none" removes it)
#   kvg_netns_down            remove both namespaces (and so the veth pair)
#
# After kvg_netns_up: KVG_NS_A, KVG_NS_B, KVG_VETH_A, KVG_VETH_B,
# KVG_ADDR_A, KVG_ADDR_B, KVG_EXEC_A, KVG_EXEC_B ("ip netns exec NAME").
# The addresses exist only inside these namespaces.  RATE is what tc
# accepts: 1gbit, 200mbit.

kvg_netns_usable() {
	[ "$(id -u)" -eq 0 ] || return 1
	command -v ip >/dev/null 2>&1 || return 1
	ip netns list >/dev/null 2>&1
}

# The veth name for namespace $1: at most 15 bytes, unique per namespace.
kvg_veth_name() {
	printf 'v%s' "$(printf '%s' "$1" | cksum | cut -d' ' -f1)" | cut -c1-15
}

kvg_netns_up() {
	KVG_NS_A=$1 KVG_NS_B=$2
	KVG_VETH_A=$(kvg_veth_name "$1") KVG_VETH_B=$(kvg_veth_name "$2")
	KVG_ADDR_A=10.199.0.1 KVG_ADDR_B=10.199.0.2
	KVG_EXEC_A="ip netns exec $1" KVG_EXEC_B="ip netns exec $2"
	export KVG_NS_A KVG_NS_B KVG_VETH_A KVG_VETH_B KVG_ADDR_A KVG_ADDR_B \
	    KVG_EXEC_A KVG_EXEC_B
	if [ "$KVG_VETH_A" = "$KVG_VETH_B" ]; then
		echo "kvg_netns_up: namespace names give one veth name" >&2
		return 1
	fi
	ip netns add "$1" || return 1
	if ! ip netns add "$2"; then
		ip netns del "$1"
		return 1
	fi
	if ! { ip link add "$KVG_VETH_A" netns "$1" type veth peer name \
	    "$KVG_VETH_B" netns "$2" &&
	    ip -n "$1" addr add "$KVG_ADDR_A/30" dev "$KVG_VETH_A" &&
	    ip -n "$2" addr add "$KVG_ADDR_B/30" dev "$KVG_VETH_B" &&
	    ip -n "$1" link set lo up && ip -n "$2" link set lo up &&
	    ip -n "$1" link set "$KVG_VETH_A" up &&
	    ip -n "$2" link set "$KVG_VETH_B" up; }; then
		kvg_netns_down
		return 1
	fi
	if [ -n "${3:-}" ] && [ "$3" != none ]; then
		kvg_netns_shape "$3" || { kvg_netns_down; return 1; }
	fi
}

# tbf on the egress of both veth ends.  The burst (256 KiB) holds a full
# GSO super-packet; the 50 ms latency bounds the queue.
kvg_netns_shape() {
	for end in "$KVG_NS_A:$KVG_VETH_A" "$KVG_NS_B:$KVG_VETH_B"; do
		ns=${end%%:*} dev=${end#*:}
		if [ "$1" = none ]; then
			ip netns exec "$ns" tc qdisc del dev "$dev" root \
			    2>/dev/null || true
		else
			ip netns exec "$ns" tc qdisc replace dev "$dev" root \
			    tbf rate "$1" burst 256kb latency 50ms || return 1
		fi
	done
}

kvg_netns_down() {
	[ -n "${KVG_NS_A:-}" ] && ip netns del "$KVG_NS_A" 2>/dev/null
	[ -n "${KVG_NS_B:-}" ] && ip netns del "$KVG_NS_B" 2>/dev/null
	return 0
}
