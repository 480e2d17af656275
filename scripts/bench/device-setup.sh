#!/bin/sh
# Call 1 of the two device calls (docs/performance.md "Beside the peers, and where the time goes"):
#
#   device.run  command: sh scripts/bench/device-setup.sh   carry: ['.devbench/boot']   timeout_s: 120
#
# The lent H200 machine (2026-11-28) has no Node and no Vulkan loader: its image is Python's. The
# boot folder that device-pack.mjs writes holds a stripped, xz-compressed copy of this machine's Node
# (21 MiB) and Debian's Vulkan loader and GL dispatch libraries (the NVIDIA ICD, libGLX_nvidia.so.0,
# needs libGLdispatch.so.0). The pack and the boot folder do not fit one call's 64 MiB together, so
# this call installs them and the second call, made while the machine is still warm (30 s), runs
#
#   device.run  command: PATH=/opt/hearth-node:$PATH node scripts/bench/device-run.mjs   carry: ['.devbench/pack']
#
# Plain sh and python3 (lzma): nothing else is known to be there.
set -eu
boot=.devbench/boot
mkdir -p /opt/hearth-node
if [ -f "$boot/node.xz" ]; then
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$boot/node.xz" /opt/hearth-node/node
  chmod +x /opt/hearth-node/node
fi
/opt/hearth-node/node --version || command -v node
# Unpack the libraries only where the machine lacks them: dpkg -x into / must not replace its own.
if ! ldconfig -p | grep -q 'libGLdispatch.so.0' || ! ldconfig -p | grep -q 'libvulkan.so.1'; then
  for f in "$boot"/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
  ldconfig
fi
ldconfig -p | grep -E 'libvulkan.so.1|libGLdispatch.so.0|libGLX_nvidia.so.0' || true
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
