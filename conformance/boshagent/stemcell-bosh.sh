# Sourced by both rigs' scripts once /var/vcap is theirs: what every
# stemcell line has for the agent, from the rig's directory $R (bin/:
# bosh-agent, the stemcell's monit 5.2.5; etc/: agent.json, settings.json).
# The groups the agent names, localhost for monit's mail server,
# resolvconf's directory; /var/vcap/bosh with the agent (and its
# bosh-enable-monit-access link, as the stemcell has it), its
# configuration, monit 5.2.5 and the stemcell's monitrc, and the scripts
# the agent runs at its bootstrap, which do nothing here (each rig sets
# eth0 itself).
for g in vcap syslog utmp; do getent group "$g" >/dev/null || groupadd -r "$g"; done
getent passwd vcap >/dev/null || useradd -g vcap -s /bin/bash vcap
grep -qw localhost /etc/hosts 2>/dev/null || echo "127.0.0.1 localhost" >>/etc/hosts
mkdir -p /etc/resolvconf/resolv.conf.d

B=/var/vcap/bosh
mkdir -p $B/bin $B/etc $B/log /var/vcap/monit/job /var/vcap/data /var/vcap/jobs /var/vcap/packages
cp "$R/bin/bosh-agent" "$R/bin/monit" $B/bin/
chmod 0755 $B/bin/bosh-agent $B/bin/monit
ln $B/bin/bosh-agent $B/etc/bosh-enable-monit-access
cp "$R/etc/agent.json" $B/agent.json
cp "$R/etc/settings.json" $B/settings-source.json
for s in restart_networking resolvconf bosh-agent-rc bosh-start-logging-and-auditing; do
	printf '#!/bin/sh\nexit 0\n' >$B/bin/$s
	chmod 0755 $B/bin/$s
done
cat >$B/etc/monitrc <<'MONITRC'
set daemon 10
set logfile /var/vcap/monit/monit.log
set httpd port 2822 and use address 127.0.0.1
  allow cleartext /var/vcap/monit/monit.user
include /var/vcap/monit/*.monitrc
include /var/vcap/monit/job/*.monitrc
MONITRC
chmod 0700 $B/etc/monitrc
cat >/var/vcap/monit/alerts.monitrc <<'ALERTS'
set alert agent@local
set mailserver localhost port 2825 with timeout 15 seconds
set eventqueue basedir /var/vcap/monit/events slots 5000
ALERTS
