#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# rdma-probe where no RDMA device exists: every usage rule, and the
# fail-closed exits (69) with their exact messages.  The handshake runs
# over real loopback TCP in tests/unit/test_rdmahs.c; a real run against
# a device is tests/hw/rdma.bats.

bats_require_minimum_version 1.5.0
load helpers

have_rdma() {
	ibv_devices 2>/dev/null | awk 'NR > 2 && NF { n++ } END { exit !n }'
}

need_no_device() {
	if have_rdma; then
		skip "this host has an RDMA device: the no-device path cannot be shown here"
	fi
}

NODEV="rdma-probe: no RDMA device found (is the rdma_rxe or mlx5_ib module loaded? see ibv_devices)"

@test "--help prints both synopsis lines on stdout and exits 0" {
	run --separate-stderr rdma-probe --help
	assert_success
	assert_output --partial "usage: rdma-probe server [--dev NAME]"
	assert_output --partial "rdma-probe client HOST"
	[ -z "$stderr" ]
}

@test "--version names the command and kvgate" {
	run rdma-probe --version
	assert_success
	assert_output --regexp '^rdma-probe \(kvgate\) [0-9]'
}

@test "no role is a usage error with the synopsis" {
	run rdma-probe
	assert_failure 2
	assert_output --partial "usage: rdma-probe server"
}

@test "an unknown role is named" {
	run rdma-probe serve
	assert_failure 2
	assert_output "rdma-probe: serve: the first argument is server or client"
}

@test "client needs exactly one HOST" {
	run rdma-probe client
	assert_failure 2
	assert_output "rdma-probe: client needs exactly one HOST"
	run rdma-probe client a b
	assert_failure 2
	assert_output "rdma-probe: client needs exactly one HOST"
	run rdma-probe server extra
	assert_failure 2
}

@test "client-only options given to the server are refused by name" {
	for o in "--duration 1s" "--iters 10" "--tx-depth 64" "--interval 1s" "--mem host"; do
		run rdma-probe server $o
		assert_failure 2
		assert_output "rdma-probe: ${o%% *} is a client option"
	done
}

@test "--max-mem is a server option, range-checked" {
	run rdma-probe client h --max-mem 1GiB
	assert_failure 2
	assert_output "rdma-probe: --max-mem is a server option"
	run rdma-probe server --max-mem 0
	assert_failure 2
	assert_output "rdma-probe: --max-mem 0: must be 1 byte to 256GiB"
	run rdma-probe server --max-mem 257GiB
	assert_failure 2
	assert_output "rdma-probe: --max-mem 257GiB: must be 1 byte to 256GiB"
	run rdma-probe server --max-mem lots
	assert_failure 2
	assert_output --partial "rdma-probe: --max-mem:"
}

@test "a server's own -q x --sizes over its memory bound is refused before any device" {
	run rdma-probe server -q 32 --sizes 4KiB..1GiB
	assert_failure 2
	assert_output "rdma-probe: --sizes/-q: 32 QPs x 1073741824 bytes is more than --max-mem 17179869184 bytes"
	run rdma-probe server -q 4 -s 1MiB --max-mem 3MiB
	assert_failure 2
	assert_output "rdma-probe: --sizes/-q: 4 QPs x 1048576 bytes is more than --max-mem 3145728 bytes"
}

@test "the server's default bound admits 16 QPs of 1GiB, which then needs a device" {
	need_no_device
	run --separate-stderr rdma-probe server -q 16 -s 1GiB --oob-port 0
	assert_failure 69
	[[ $stderr == "$NODEV"* ]]
	run --separate-stderr rdma-probe server -q 4 -s 1MiB --max-mem 4MiB --oob-port 0
	assert_failure 69
}

@test "--duration and --iters exclude each other" {
	run rdma-probe client h --duration 2s --iters 100
	assert_failure 2
	assert_output "rdma-probe: --duration and --iters exclude each other"
}

@test "--interval needs a duration run" {
	run rdma-probe client h --iters 100 --interval 1s
	assert_failure 2
	assert_output "rdma-probe: --interval needs --duration, not --iters"
}

@test "--size and --sizes exclude each other" {
	run rdma-probe client h -s 64KiB --sizes 4KiB..1MiB
	assert_failure 2
	assert_output "rdma-probe: --size and --sizes exclude each other"
}

@test "--sizes wants MIN..MAX, smallest first, within 1 byte..1GiB" {
	run rdma-probe client h --sizes 4KiB
	assert_failure 2
	assert_output --partial "want MIN..MAX (e.g. 4KiB..8MiB)"
	run rdma-probe client h --sizes 8MiB..4KiB
	assert_failure 2
	assert_output "rdma-probe: --sizes 8MiB..4KiB: the smallest size comes first"
	run rdma-probe client h --sizes 4KiB..2GiB
	assert_failure 2
	assert_output "rdma-probe: --sizes: 2GiB: must be 1 to 1073741824 bytes"
	run rdma-probe client h -s 0
	assert_failure 2
	run rdma-probe client h -s 12furlongs
	assert_failure 2
	assert_output --partial "rdma-probe: --size:"
}

@test "numeric options are range-checked with the reason" {
	run rdma-probe client h -q 0
	assert_failure 2
	assert_output --partial "rdma-probe: --qps:"
	run rdma-probe client h -q 257
	assert_failure 2
	run rdma-probe client h --tx-depth 0
	assert_failure 2
	run rdma-probe client h --ib-port 0
	assert_failure 2
	run rdma-probe client h --gid-index 256
	assert_failure 2
	run rdma-probe client h --oob-port 65536
	assert_failure 2
	run rdma-probe client h --iters 0
	assert_failure 2
	assert_output "rdma-probe: --iters 0: must be at least 1"
	run rdma-probe client h --duration -1s
	assert_failure 2
	run rdma-probe client h --timeout soon
	assert_failure 2
}

@test "--mtu must be an InfiniBand MTU" {
	run rdma-probe client h --mtu 1500
	assert_failure 2
	assert_output "rdma-probe: --mtu 1500: must be 256, 512, 1024, 2048 or 4096"
}

@test "--mem takes host or cuda:N only" {
	run rdma-probe client h --mem gpu0
	assert_failure 2
	assert_output "rdma-probe: --mem gpu0: must be host or cuda:N"
	run rdma-probe client h --mem cuda:x
	assert_failure 2
}

@test "GPU memory without a registration path exits 2 naming both choices" {
	unset KVGATE_GPU_REGISTRATION
	run rdma-probe client h --mem cuda:0
	assert_failure 2
	assert_output "rdma-probe: --mem cuda:0 needs a registration path: give --registration dmabuf or --registration peermem (or set KVGATE_GPU_REGISTRATION)"
}

@test "--registration with host memory is refused" {
	run rdma-probe client h --mem host --registration peermem
	assert_failure 2
	assert_output "rdma-probe: --registration applies to --mem cuda:N only"
}

@test "an unknown registration path is refused, from the option or the environment" {
	run rdma-probe client h --mem cuda:0 --registration ats
	assert_failure 2
	assert_output 'rdma-probe: registration "ats": must be dmabuf or peermem'
	KVGATE_GPU_REGISTRATION=ats run rdma-probe client h --mem cuda:0
	assert_failure 2
	assert_output 'rdma-probe: registration "ats": must be dmabuf or peermem'
}

@test "no RDMA device: the server exits 69 with the precise message, and writes nothing" {
	need_no_device
	run --separate-stderr rdma-probe server --oob-port 0
	assert_failure 69
	assert_output ""
	[[ $stderr == "$NODEV"* ]]
}

@test "no RDMA device: the client exits 69 before connecting anywhere" {
	need_no_device
	run --separate-stderr rdma-probe client 127.0.0.1 --oob-port 9 -q 4 --sizes 4KiB..1MiB --duration 1s
	assert_failure 69
	assert_output ""
	[[ $stderr == "$NODEV"* ]]
}

@test "no RDMA device: the kernel's lack of RDMA support is said when that is the cause" {
	need_no_device
	[ ! -d /sys/class/infiniband ] || skip "this kernel has RDMA support"
	run --separate-stderr rdma-probe client 127.0.0.1 --dev mlx5_0
	assert_failure 69
	[ "$stderr" = "$NODEV; this kernel has no RDMA support: ibv_get_device_list: Function not implemented" ]
}

@test "GPU memory with no CUDA driver: exit 69 naming the driver, before the device" {
	[ ! -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || skip "this host has libcuda.so.1"
	run --separate-stderr rdma-probe client 127.0.0.1 --mem cuda:0 --registration dmabuf
	assert_failure 69
	[ "$stderr" = "rdma-probe: --mem cuda:0: no CUDA driver: libcuda.so.1: cannot open shared object file: No such file or directory (is the NVIDIA driver installed?)" ]
	KVGATE_GPU_REGISTRATION=peermem run --separate-stderr rdma-probe client 127.0.0.1 --mem cuda:1
	assert_failure 69
	[[ $stderr == "rdma-probe: --mem cuda:1: no CUDA driver:"* ]]
}

@test "valgrind: the no-device path is clean" {
	need_no_device
	run_vg rdma-probe client 127.0.0.1 -q 8 --sizes 4KiB..8MiB
	assert_failure 69
	assert_output --partial "no RDMA device found"
}
