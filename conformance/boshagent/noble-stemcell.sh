#!/bin/bash
# Runs in the VM rig's guest (systemd as PID 1, cgroup v2) as its script:
# lays out a Noble stemcell for the real BOSH agent, with the agent's
# systemd service manager and its nftables monit firewall, starts the
# agent's unit, and waits until the host's driver, which speaks to the
# agent through qemu's forwarded port, writes /rig/driver-done. Then it
# records what the run left in /rig/out and ends (the guest powers off).
# /rig is the rig's directory (stemcell-bosh.sh says what it holds).
set -uxo pipefail
exec >/rig/out/guest.log 2>&1

# eth0 with the settings' address on qemu's user network (no DHCP here:
# the agent's restart_networking is a no-op, as in any rig).
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2

R=/rig
. $R/stemcell-bosh.sh

# The stemcell's units: its monit (started by the agent once it has set the
# VM up; the guest's Debian monit, started at boot, makes way), and the
# agent itself, in system.slice/bosh-agent.service.
systemctl stop monit.service
cat >/etc/systemd/system/monit.service <<'UNIT'
[Unit]
Description=monit (the stemcell's)
After=network.target
ConditionPathExists=/var/vcap/data/sys/run

[Service]
ExecStart=/bin/bash -c 'PATH=/var/vcap/bosh/bin:$PATH exec nice -n -10 /var/vcap/bosh/bin/monit -I -c /var/vcap/bosh/etc/monitrc'
Restart=always
KillMode=process
UNIT
cat >/etc/systemd/system/bosh-agent.service <<'UNIT'
[Unit]
Description=BOSH agent
After=network.target

[Service]
WorkingDirectory=/var/vcap/bosh
Environment=PATH=/var/vcap/bosh/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=/var/vcap/bosh/bin/bosh-agent -P ubuntu -C /var/vcap/bosh/agent.json
StandardOutput=append:/rig/out/agent.log
StandardError=append:/rig/out/agent.log
Restart=always
UNIT
systemctl daemon-reload
systemctl start bosh-agent.service
echo "vigil-rig: the agent started" >/dev/console

# The host's driver runs the deploy; it says when it is done. (Across the
# VM's boundary the share is the one channel: a look a second.)
for _ in $(seq 1800); do
	[ -e /rig/driver-done ] && break
	sleep 1
done

set +x
{
	for f in /var/vcap/sys/log/standin/hooks.log /var/vcap/sys/log/standin/standin.stdout.log; do echo "== $f"; cat $f; done
	echo "== the job's rules while it ran (post-start)"
	cat /var/vcap/sys/log/standin/monit-access-jobs.txt
	echo "== enable-monit-access (standin.stderr.log)"
	grep -hi -e rule -e cgroup -e falling /var/vcap/sys/log/standin/standin.stderr.log
	echo "== nft list table inet bosh_agent"
	nft list table inet bosh_agent
	echo "== /var/vcap/bosh/bin/monit"
	head -c 300 $B/bin/monit | grep -a -m3 -e '^#' -e 'STEMCELL=' || echo "(a binary)"
	echo "== units"
	systemctl --no-pager show -p Id,ActiveState,MainPID,ControlGroup,DropInPaths monit.service vigil.service bosh-agent.service
	echo "== systemd-cgls"
	systemd-cgls --no-pager
} >/rig/out/facts.txt 2>&1
journalctl --no-pager -o short-precise -u monit.service -u vigil.service -u bosh-agent.service >/rig/out/journal.txt 2>&1
cp -a /var/vcap/sys/log /rig/out/sys-log 2>/dev/null
cp /var/vcap/monit/monit.log /rig/out/ 2>/dev/null
systemctl stop bosh-agent.service
true
