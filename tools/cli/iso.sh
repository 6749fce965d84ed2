# shellcheck shell=bash
# ./pvmmu iso: a bootable GRUB ISO of the hypervisor and guests.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_iso() {
  cat <<'EOF2'
usage: ./pvmmu iso [--out FILE] [--cpus N] [--append CMDLINE] [GUEST[:WORDS]...]

Installs missing packages, builds what is missing, and makes a BIOS-bootable
ISO image on which GRUB 2 boots the hypervisor image pvmmu-hv by Multiboot 2
(tools/make-iso.sh, with grub-mkrescue). Each GUEST becomes a module2 and a
domain, in order. A GUEST is a guest program's name, as ./pvmmu run takes it
(./pvmmu run --list): its guest kernel goes on the ISO with the module words
./pvmmu run --platform qemu gives it (vcpus=N frames=F); or the path of a
guest kernel (an ELF64 file with Xen's notes), with the hypervisor's defaults.
:WORDS puts more words on its module string, before the others, so they win
(atomic-ad-preserve:vcpus=2 gives "atomic-ad-preserve vcpus=2 vcpus=3 ...";
the hypervisor takes the first vcpus=).

  -o, --out FILE    the ISO to write (default build/pvmmu.iso)
  --cpus N          vCPUs of each guest's domain (vcpus=N on its module)
  --append CMDLINE  the hypervisor's command line (docs/boot.md)

Boot it under QEMU:
  qemu-system-x86_64 -cdrom build/pvmmu.iso -smp 4 -m 512 -display none \
    -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04
or write it to a USB stick and boot a real machine (BIOS, or UEFI with CSM;
console on COM1 at 115200 8N1): docs/boot.md "Booting a real machine".
Needs grub-common, grub-pc-bin and xorriso (tools/deps.txt): without them it
says so and fails.
EOF2
}

cmd_iso() {
  local out="$ROOT/build/pvmmu.iso" cpus='' append=''
  local -a guests=()
  while (($#)); do
    case $1 in
      -h | --help | help) usage_iso; return 0 ;;
      -o | --out | --cpus | --append)
        (($# >= 2)) || usage_error iso "$1 needs a value"
        case $1 in
          -o | --out) out=$2 ;;
          --cpus) cpus=$2 ;;
          --append) append=$2 ;;
        esac
        shift ;;
      -*) usage_error iso "unknown option '$1'" ;;
      *) guests+=("$1") ;;
    esac
    shift
  done
  [[ -z $cpus || $cpus =~ ^[1-9][0-9]*$ ]] || usage_error iso "--cpus wants a positive number, not '$cpus'"

  # Guest programs are looked up the way ./pvmmu run --platform qemu does
  # (pvmmu-run's table); paths are taken as they are.
  local names=0 g
  for g in "${guests[@]}"; do [[ -f ${g%%:*} ]] || names=1; done
  maybe_deps
  if ((names)); then
    build_tree main pvmmu-run || die "build of pvmmu-run and the guests failed"
  else
    build_tree main pvmmu-hv || die "build of the hypervisor image failed"
  fi
  local image="$ROOT/build/hypervisor/arch/x86_64/pvmmu-hv" run="$ROOT/build/tools/pvmmu-run"
  # Modules as make-iso.sh takes them: --module KERNEL 'NAME WORDS' (the path
  # whole, whatever it holds); `kernels` keeps the strings.
  local -a kernels=() modules=() args
  local words
  for g in "${guests[@]}"; do
    words=''
    if [[ $g == *:* ]]; then words=" ${g#*:}" g=${g%%:*}; fi
    if [[ -f $g ]]; then
      kernels+=("${g##*/}$words${cpus:+ vcpus=$cpus}")
      modules+=(--module "$g" "${kernels[-1]}")
      continue
    fi
    mapfile -t args < <("$run" ${cpus:+--cpus "$cpus"} --boot-args "$g") || true
    ((${#args[@]} == 2)) || die "no guest program or file '$g' (./pvmmu run --list shows the programs)"
    kernels+=("$g$words ${args[1]}")
    modules+=(--module "${args[0]}" "${kernels[-1]}")
  done

  local rc=0
  "$ROOT/tools/make-iso.sh" --image "$image" --out "$out" --append "$append" "${modules[@]}" || rc=$?
  case $rc in
    0) ;;
    77) die "the tools to make the ISO are missing (above): run ./pvmmu deps" ;;
    *) die "making the ISO failed" ;;
  esac
  # What the domains need, as ./pvmmu run gives QEMU (tools/defs.sh pvmmu_machine).
  local cpus_needed mib
  read -r cpus_needed mib < <(pvmmu_machine "${kernels[@]}")
  ((cpus_needed)) || cpus_needed=4 mib=256   # as ./pvmmu boot
  say "${out#"$ROOT"/}: boot it with
  qemu-system-x86_64 -cdrom ${out#"$ROOT"/} -smp $cpus_needed -m $mib -display none -serial stdio -device $(pvmmu_debug_exit)
  or on a real machine from a USB stick (docs/boot.md \"Booting a real machine\")"
}
