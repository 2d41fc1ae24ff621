#!/bin/sh
# The main job (`make run`): the template "default" (a boot of the default
# kernel and rootfs, snapshotted; built once per state directory, and
# again when either changes), a sandbox restored from it, `uname -a` in it
# through the guest agent, then nothing left of the sandbox.  Needs
# /dev/kvm: `make run` runs it in the KVM box where there is none.
B=${BUILD:-build}
"$B/emberctl" template build default --if-missing >/dev/null || exit 1
id=$("$B/emberctl" run --template default --ttl 600) || exit 1
echo "sandbox $id is up; emberctl exec $id -- uname -a:"
"$B/emberctl" exec "$id" -- uname -a
rc=$?
"$B/emberctl" kill "$id" >/dev/null
exit $rc
