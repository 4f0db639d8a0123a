#!/bin/bash
# Recording stand-ins for the commands the bootstrap scripts run. Installed
# into "$GPUFORM_ROOT/bin" under each command's name (argv[0] says which);
# every call is appended to "$GPUFORM_ROOT/calls.log" as one line, and a
# little state under "$GPUFORM_ROOT/fake" plays the machine (GPUs, disks,
# mounts) so that a second run sees what the first one did.
set -euo pipefail
root="${GPUFORM_ROOT:?}"
fake="$root/fake"
mkdir -p "$fake"
me="$(basename "$0")"
echo "$me $*" >> "$root/calls.log"
case "$me" in
  nvidia-smi)
    if [ $# -eq 0 ]; then
      [ -e "$fake/no-driver" ] && exit 9
      exit 0
    fi
    if [ "$1" = mig ]; then
      gpu="$3"
      case "$4" in
        -lgi)
          [ -s "$fake/gi$gpu" ] || { echo "No GPU instances found"; exit 6; }
          n=1
          while read -r p; do
            echo "|   $gpu  MIG $p   9   $n   0:4 |"
            n=$((n + 1))
          done < "$fake/gi$gpu"
          ;;
        -cgi)
          tr ',' '\n' <<< "$5" >> "$fake/gi$gpu"
          ;;
        -dci) ;;
        -dgi) : > "$fake/gi$gpu" ;;
      esac
      exit 0
    fi
    if [ "$1" = -i ]; then
      gpu="$2"
      case "$3" in
        --query-gpu=mig.mode.current) cat "$fake/mig$gpu" 2>/dev/null || echo Disabled ;;
        -mig) echo Enabled > "$fake/mig$gpu" ;;
      esac
    fi
    ;;
  blkid)
    # `blkid -L LABEL`: the device holding that filesystem label.
    if [ "${1:-}" = -L ]; then
      [ -e "$fake/fs-$2" ] && cat "$fake/fs-$2"
      exit 0
    fi
    # `blkid -o value -s TYPE DEV`: no filesystem on fresh disks.
    exit 2
    ;;
  mkfs)
    label="" dev=""
    while [ $# -gt 0 ]; do
      case "$1" in -L) label="$2"; shift ;; /dev/*) dev="$1" ;; esac
      shift
    done
    echo "$dev" > "$fake/fs-$label"
    ;;
  mountpoint)
    # mountpoint -q "$root/PATH"
    [ -e "$fake/mounted${2#"$root"}" ]
    ;;
  mount)
    mkdir -p "$fake/mounted$1"
    ;;
  curl)
    out=""
    while [ $# -gt 0 ]; do
      case "$1" in -o) out="$2"; shift ;; esac
      shift
    done
    if [ -n "$out" ]; then
      # The k3s installer stand-in: runs `k3s` with what the real one passes on.
      printf '#!/bin/sh\necho "env K3S_URL=${K3S_URL:-} K3S_TOKEN=${K3S_TOKEN:-} K3S_AGENT_TOKEN=${K3S_AGENT_TOKEN:-} INSTALL_K3S_VERSION=${INSTALL_K3S_VERSION:-}" >> "$GPUFORM_ROOT/calls.log"\nexec k3s "$INSTALL_K3S_EXEC" "$@"\n' > "$out"
    else
      echo "deb https://nvidia.github.io/libnvidia-container/stable/deb/\$(ARCH) /"
    fi
    ;;
  gpg)
    cat > /dev/null
    ;;
  k3s)
    # A first server start makes the CAs it was not given.
    if [ "${1:-}" = server ]; then
      mkdir -p "$root/var/lib/rancher/k3s/server/tls"
      echo "PEM k3s-client-ca" > "$root/var/lib/rancher/k3s/server/tls/client-ca.crt"
    fi
    ;;
  *) ;;
esac
exit 0
