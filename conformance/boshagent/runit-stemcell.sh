#!/bin/bash
# PID 1 of private mount, network, UTS and PID namespaces (unshare -mnup
# --fork --mount-proc): a runit stemcell's layout (Jammy's service manager)
# for the real BOSH agent, which then runs as root here. $RIG is the run's
# directory on the host: bin/ (bosh-agent, the stemcell's monit), etc/
# (agent.json, settings.json), out/ (what the run leaves). Everything the
# agent changes lands on private copies: /var/vcap, /tmp, /var/tmp,
# /var/log, /dev/shm are fresh tmpfs, /etc and /var overlays whose upper
# layers are in $RIG, and its hostname, addresses and nftables rules are this
# namespace's. Once the agent runs it writes "ready" on fd 3.
set -euxo pipefail
: "${RIG:?}"
mount --make-rprivate /

# The agent finds eth0 through /sys/class/net, which shows the namespace
# that mounted sysfs: a sysfs of this network namespace, with the host's
# cgroup hierarchies mounted back below it.
mkdir -p "$RIG/host-sys"
mount --rbind /sys "$RIG/host-sys"
mount -t sysfs sysfs /sys
mount --rbind "$RIG/host-sys/fs/cgroup" /sys/fs/cgroup
umount -l "$RIG/host-sys"

hostname agent-rig
ip link set lo up
# eth0 with the settings' address (this kernel has no dummy links: one end
# of a veth pair).
ip link add eth0 type veth peer name eth0-peer
ip addr add "$IP/24" dev eth0
ip link set eth0 up
ip link set eth0-peer up

# /etc and /var: overlays whose upper layers are the rig's (this machine
# may have no /var/vcap, and must not get one).
for d in etc var; do
	mkdir -p "$RIG/$d-upper" "$RIG/$d-work"
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$RIG/$d-upper,workdir=$RIG/$d-work" "/$d"
done
mkdir -p /var/vcap
mount -t tmpfs -o mode=755 tmpfs /var/vcap
mkdir -p /var/vcap/rig
mount --bind "$RIG" /var/vcap/rig
for d in /var/tmp /var/log; do mount -t tmpfs tmpfs "$d"; done
for d in /tmp /dev/shm; do mount -t tmpfs -o mode=1777 tmpfs "$d"; done
R=/var/vcap/rig # $RIG from here on (the host's /tmp is hidden)

. $R/stemcell-bosh.sh

# runit: the stemcell's monit service, down until the agent starts it.
mkdir -p /etc/sv/monit /etc/service
cat >/etc/sv/monit/run <<'RUN'
#!/bin/bash
export PATH=/var/vcap/bosh/bin:$PATH
exec 2>&1
exec nice -n -10 /var/vcap/bosh/bin/monit -I -c /var/vcap/bosh/etc/monitrc
RUN
chmod 0755 /etc/sv/monit/run
touch /etc/sv/monit/down
ln -sfn /etc/sv/monit /etc/service/monit

export PATH=$B/bin:/usr/sbin:/usr/bin:/sbin:/bin
runsvdir -P /etc/service >$R/out/runsvdir.log 2>&1 &
cd $B
$B/bin/bosh-agent -P ubuntu -C $B/agent.json >$R/out/agent.log 2>&1 &
echo ready >&3
exec 3>&-
wait
