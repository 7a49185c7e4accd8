package vmrig

// GuestRecipe is the rig's guest: Debian 13 (systemd 257, kernel 6.12, the
// unified cgroup hierarchy by default), D-Bus, the vcap user, and the unit
// that runs /rig/run from the host's share once the system is up and
// powers the guest off when it ends, whatever its outcome.
func GuestRecipe() Recipe {
	return Recipe{
		Suite: "trixie",
		// monit: the stemcell's own monit, which vigil's release replaces
		// and gives back (stemcell-release). nftables: the agent's monit
		// firewall (stemcell-firewall).
		Packages: []string{"systemd", "systemd-sysv", "dbus", "udev", "kmod", "procps", "linux-image-amd64", "monit", "nftables"},
		Users:    []string{"vcap:1000"},
		Files: map[string]string{
			"etc/hostname": "vigil-rig\n",
			"etc/fstab": "/dev/vda / ext4 rw 0 1\n" +
				"rig /rig 9p trans=virtio,version=9p2000.L,msize=524288,access=any 0 0\n",
			"etc/modules-load.d/rig.conf":                                  "9p\n9pnet_virtio\n",
			"etc/systemd/journald.conf.d/rig.conf":                         "[Journal]\nStorage=volatile\n",
			"etc/systemd/system/vigil-rig.service":                         rigUnit,
			"etc/systemd/system/multi-user.target.wants/vigil-rig.service": "->/etc/systemd/system/vigil-rig.service",
			// Nothing the scenarios do not need runs (and takes TCG's time).
			"etc/systemd/system/apt-daily.timer":              "->/dev/null",
			"etc/systemd/system/apt-daily-upgrade.timer":      "->/dev/null",
			"etc/systemd/system/e2scrub_all.timer":            "->/dev/null",
			"etc/systemd/system/fstrim.timer":                 "->/dev/null",
			"etc/systemd/system/systemd-tmpfiles-clean.timer": "->/dev/null",
		},
	}
}

// rigUnit runs the host's script. Its start marker tells the host that
// the system is up (the boot time); its end, success or not, powers off.
const rigUnit = `[Unit]
Description=vigil VM rig: run /rig/run, then power off
After=multi-user.target
RequiresMountsFor=/rig
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "` + StartMarker + `$(cut -d" " -f1 /proc/uptime)" > /dev/console; exec /bin/sh /rig/run'
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
`
