#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# gpu-preflight on a host without a CUDA driver: the usage rules, the
# fail-closed exit 69, and the host facts read from fake *sysfs trees*
# (never a fake GPU).  The decision itself is unit-tested in
# tests/unit/test_preflight.c.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	ROOT=$(mktemp -d)
	REL=$(uname -r)
	if [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || ldconfig -p | grep -q 'libcuda\.so\.1 '; then
		HAVE_CUDA=1
	else
		HAVE_CUDA=0
	fi
}

teardown() {
	rm -rf "$ROOT"
}

jqc() { printf "%s\n" "$1" | jq -c "$2"; }

need_no_driver() {
	[ "$HAVE_CUDA" = 0 ] || skip "this host has libcuda.so.1: the no-driver path cannot be shown here"
}

@test "--help prints the synopsis on stdout and exits 0" {
	run gpu-preflight --help
	assert_success
	assert_output --partial "usage: gpu-preflight --registration dmabuf|peermem"
}

@test "--version names the command and kvgate" {
	run gpu-preflight --version
	assert_success
	assert_output --regexp '^gpu-preflight \(kvgate\) [0-9]'
}

@test "without a registration path it exits 2 and names both choices" {
	unset KVGATE_GPU_REGISTRATION
	run gpu-preflight
	assert_failure 2
	assert_output --partial "--registration dmabuf or --registration peermem"
	assert_output --partial "KVGATE_GPU_REGISTRATION"
	assert_output --partial "there is no default"
}

@test "an empty KVGATE_GPU_REGISTRATION is no choice: exit 2" {
	KVGATE_GPU_REGISTRATION= run gpu-preflight
	assert_failure 2
	assert_output --partial "no registration path chosen"
}

@test "an unknown registration path is a usage error naming the two valid ones" {
	run gpu-preflight --registration rdma
	assert_failure 2
	assert_output 'gpu-preflight: registration "rdma": must be dmabuf or peermem'
	KVGATE_GPU_REGISTRATION=nvlink run gpu-preflight
	assert_failure 2
	assert_output --partial '"nvlink": must be dmabuf or peermem'
}

@test "unknown options and stray arguments are usage errors" {
	run gpu-preflight --registration dmabuf --frobnicate
	assert_failure 2
	assert_output --partial "usage: gpu-preflight"
	run gpu-preflight --registration dmabuf extra
	assert_failure 2
	assert_output "gpu-preflight: unexpected argument: extra"
}

@test "a malformed --gpus list is rejected before the driver is touched" {
	run gpu-preflight --registration peermem --gpus 0,,1
	assert_failure 2
	assert_output --partial 'empty entry in GPU list "0,,1"'
	run gpu-preflight --registration peermem --gpus 1,1
	assert_failure 2
	assert_output "gpu-preflight: --gpus: GPU 1 listed twice"
	run gpu-preflight --registration peermem --gpus GPU-zz
	assert_failure 2
	assert_output --partial 'bad GPU UUID "GPU-zz"'
	run gpu-preflight --registration peermem --gpus MIG-GPU-1234/1/0
	assert_failure 2
	assert_output --partial "bad MIG id"
}

@test "a malformed CUDA_VISIBLE_DEVICES is named as such" {
	CUDA_VISIBLE_DEVICES=0,nvidia1 run gpu-preflight --registration peermem
	assert_failure 2
	assert_output --partial 'CUDA_VISIBLE_DEVICES: bad GPU entry "nvidia1"'
}

@test "no CUDA driver: exit 69, the exact message, and a not-ready verdict" {
	need_no_driver
	run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$stderr" = "gpu-preflight: no CUDA driver: libcuda.so.1: cannot open shared object file: No such file or directory (is the NVIDIA driver installed? gpu-preflight needs libcuda.so.1)" ]
	[ "$(jqv "$output" .kind)" = verdict ]
	[ "$(jqv "$output" .ready)" = false ]
	[ "$(jqv "$output" .registration)" = peermem ]
	[ "$(jqv "$output" .env.with_nvidia_peermem)" = 1 ]
	[ "$(jqv "$output" '.reasons[0]')" = "${stderr#gpu-preflight: }" ]
	[ "$(jqv "$output" .host.cuda_driver_version)" = null ]
	[ "$(jqv "$output" .host.cu_mem_get_handle_for_address_range)" = null ]
	[ "$(jqv "$output" .gpus)" = 0 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
}

@test "KVGATE_GPU_REGISTRATION=dmabuf is taken and gives with_nvidia_peermem 0" {
	need_no_driver
	KVGATE_GPU_REGISTRATION=dmabuf run --separate-stderr gpu-preflight --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(jqv "$output" .registration)" = dmabuf ]
	[ "$(jqv "$output" .env.with_nvidia_peermem)" = 0 ]
}

@test "--registration wins over KVGATE_GPU_REGISTRATION" {
	need_no_driver
	KVGATE_GPU_REGISTRATION=dmabuf run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(jqv "$output" .registration)" = peermem ]
}

@test "--emit-env prints no export line when not ready" {
	need_no_driver
	run --separate-stderr gpu-preflight --registration peermem --emit-env --sysfs-root "$ROOT"
	assert_failure 69
	assert_output ""
	[[ $stderr == *"no CUDA driver"* ]]
}

@test "a library that is not the CUDA driver is refused with the missing symbol" {
	need_no_driver
	KVGATE_LIBCUDA=libm.so.6 run --separate-stderr gpu-preflight --registration dmabuf --sysfs-root "$ROOT"
	assert_failure 69
	[ "$stderr" = "gpu-preflight: no CUDA driver: libm.so.6: the driver does not export cuInit (is the NVIDIA driver installed? gpu-preflight needs libcuda.so.1)" ]
}

@test "a valid --gpus list without a driver still fails closed with 69" {
	need_no_driver
	run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT" \
	    --gpus "0,GPU-8f6a2c1e-0b3d-4e5f-9a8b-7c6d5e4f3a2b,MIG-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
	assert_failure 69
	[ "$(jqv "$output" .ready)" = false ]
}

@test "empty sysfs tree: no module, no RDMA device, nothing invented" {
	need_no_driver
	run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(jqv "$output" .host.peermem_module)" = null ]
	[ "$(jqv "$output" .host.peermem_refcnt)" = null ]
	[ "$(jqv "$output" .host.peermem_on_disk)" = null ]
	[ "$(jqv "$output" .host.nvidia_driver_version)" = null ]
	[ "$(jqv "$output" '.host.rdma_devices | length')" = 0 ]
	[ "$(jqv "$output" '.host.memory_peers | length')" = 0 ]
}

@test "sysfs tree with nvidia_peermem loaded: module, refcount, version, peers, devices" {
	need_no_driver
	mkdir -p "$ROOT/sys/module/nvidia_peermem" "$ROOT/sys/module/nvidia" \
	    "$ROOT/sys/kernel/mm/memory_peers/nv_mem" \
	    "$ROOT/sys/class/infiniband/mlx5_0" "$ROOT/sys/class/infiniband/mlx5_1"
	echo 2 >"$ROOT/sys/module/nvidia_peermem/refcnt"
	echo 550.54.15 >"$ROOT/sys/module/nvidia_peermem/version"
	echo 550.54.15 >"$ROOT/sys/module/nvidia/version"
	echo 1.1 >"$ROOT/sys/kernel/mm/memory_peers/nv_mem/version"
	run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(jqv "$output" .host.peermem_module)" = nvidia_peermem ]
	[ "$(jqv "$output" .host.peermem_refcnt)" = 2 ]
	[ "$(jqv "$output" .host.peermem_version)" = 550.54.15 ]
	[ "$(jqv "$output" .host.nvidia_driver_version)" = 550.54.15 ]
	[ "$(jqc "$output" .host.memory_peers)" = '["nv_mem"]' ]
	[ "$(jqc "$output" .host.rdma_devices)" = '["mlx5_0","mlx5_1"]' ]
}

@test "sysfs tree with the legacy nv_peer_mem module loaded is reported as such" {
	need_no_driver
	mkdir -p "$ROOT/sys/module/nv_peer_mem"
	echo 0 >"$ROOT/sys/module/nv_peer_mem/refcnt"
	run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(jqv "$output" .host.peermem_module)" = nv_peer_mem ]
	[ "$(jqv "$output" .host.peermem_refcnt)" = 0 ]
}

@test "a peer-memory module on disk but not loaded is found under lib/modules/RELEASE" {
	need_no_driver
	mkdir -p "$ROOT/lib/modules/$REL/kernel/drivers/video"
	: >"$ROOT/lib/modules/$REL/kernel/drivers/video/nvidia-peermem.ko.xz"
	run --separate-stderr gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(jqv "$output" .host.peermem_module)" = null ]
	[ "$(jqv "$output" .host.peermem_on_disk)" = "$ROOT/lib/modules/$REL/kernel/drivers/video/nvidia-peermem.ko.xz" ]
}

@test "libibverbs' ibv_reg_dmabuf_mr is looked up for real" {
	need_no_driver
	run --separate-stderr gpu-preflight --registration dmabuf --sysfs-root "$ROOT"
	assert_failure 69
	if nm -D /usr/lib/x86_64-linux-gnu/libibverbs.so.1 2>/dev/null | grep -q ' ibv_reg_dmabuf_mr'; then
		[ "$(jqv "$output" .host.ibv_reg_dmabuf_mr)" = true ]
	else
		[ "$(jqv "$output" .host.ibv_reg_dmabuf_mr)" = false ]
	fi
}

@test "a failed write to stdout is an I/O error (74), not silence" {
	need_no_driver
	run bash -c "gpu-preflight --registration peermem --sysfs-root '$ROOT' >/dev/full"
	assert_failure 74
}

@test "valgrind: the no-driver path is clean" {
	need_no_driver
	mkdir -p "$ROOT/sys/module/nvidia_peermem" "$ROOT/sys/class/infiniband/rxe0"
	run_vg gpu-preflight --registration peermem --sysfs-root "$ROOT"
	assert_failure 69
	[ "$(printf '%s\n' "$output" | grep '^{' | jq -r .host.peermem_module)" = nvidia_peermem ]
}

jr() { printf "%s\n" "$1" | jq -r "$2"; }

need_driver() {
	[ "$HAVE_CUDA" = 1 ] || skip "no libcuda.so.1 on this host: GPU identity needs a real driver (never a fake GPU)"
}

@test "real driver: a gpu record names its CUDA ordinal and physical identity, never a bare index" {
	need_driver
	run --separate-stderr gpu-preflight --registration peermem
	[ "$status" -le 1 ] || skip "the driver is present but unusable here (status $status: $stderr)"
	gpu=$(printf '%s\n' "$output" | grep '"kind":"gpu"' | head -1)
	[ -n "$gpu" ]
	[ "$(jqc "$gpu" 'has("index")')" = false ]
	[[ $(jr "$gpu" .cuda_ordinal) =~ ^[0-9]+$ ]]
	[[ $(jr "$gpu" .uuid) == GPU-* ]]
	[[ $(jr "$gpu" .pci_bus_id) =~ ^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9]$ ]]
}

@test "real driver: CUDA_VISIBLE_DEVICES renumbers cuda_ordinal but not uuid or pci_bus_id" {
	need_driver
	run --separate-stderr gpu-preflight --registration peermem
	[ "$status" -le 1 ] || skip "the driver is present but unusable here (status $status)"
	last=$(printf '%s\n' "$output" | grep '"kind":"gpu"' | tail -1)
	uuid=$(jr "$last" .uuid)
	bus=$(jr "$last" .pci_bus_id)
	CUDA_VISIBLE_DEVICES=$uuid run --separate-stderr gpu-preflight --registration peermem
	[ "$status" -le 1 ]
	gpu=$(printf '%s\n' "$output" | grep '"kind":"gpu"')
	[ "$(jr "$gpu" .cuda_ordinal)" = 0 ]
	[ "$(jr "$gpu" .uuid)" = "$uuid" ]
	[ "$(jr "$gpu" .pci_bus_id)" = "$bus" ]
}

@test "real driver: a failed write of --emit-env lines is an I/O error (74)" {
	need_driver
	run gpu-preflight --registration peermem --emit-env
	[ "$status" = 0 ] || skip "peermem is not ready here: nothing would be written"
	run bash -c "gpu-preflight --registration peermem --emit-env >/dev/full"
	assert_failure 74
}
