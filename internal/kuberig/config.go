package kuberig

import (
	"fmt"
	"strings"
)

// containerdConfig is containerd's configuration: every path below the
// rig's directory, the CRI's runc with the cgroupfs driver, the pause
// image built locally, and no oom_score_adj below the parent's.
// restrict_oom_score_adj is required where CAP_SYS_RESOURCE is withheld
// (this machine's bounding set lacks it): without it runc cannot lower
// the sandbox's oom_score_adj and every sandbox fails with "can't get
// final child's PID from pipe: EOF".
func containerdConfig(dir, pause string) string {
	return strings.NewReplacer("@DIR@", dir, "@PAUSE@", pause).Replace(`version = 2
root = "@DIR@/containerd/root"
state = "@DIR@/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "@DIR@/run/containerd.sock"
[ttrpc]
  address = "@DIR@/run/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "@DIR@/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "@PAUSE@"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "@DIR@/run/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "@DIR@/cni/net.d"
`)
}

// cniConfig is the pods' network: a bridge the rig made (and gave the
// gateway's address), each pod a veth on it with an address from the
// rig's subnet. isGateway and ipMasq stay off, so the plugin neither
// turns on the host's forwarding nor writes iptables rules: the pods reach
// this machine and each other, nothing else, which is all the kubelet's
// probes and the scenarios need.
func cniConfig(dir string, n network) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "vigil-kuberig",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": false,
    "ipMasq": false,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q, "rangeStart": %q}]],
      "dataDir": %q
    }
  }]
}
`, n.bridge, n.subnet, n.first, dir+"/cni/ipam")
}

// kubeletConfig is the standalone kubelet's configuration: static pods
// from the rig's manifest directory, the cgroupfs driver below a cgroup
// root of the rig's own, on a cgroup v1 host; its ports and files the
// rig's; the host's iptables and kernel settings left alone.
func kubeletConfig(dir string, port, healthz int, cgroupRoot string) string {
	return strings.NewReplacer("@DIR@", dir, "@PORT@", fmt.Sprint(port), "@HEALTHZ@", fmt.Sprint(healthz),
		"@CGROUP@", cgroupRoot).Replace(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://@DIR@/run/containerd.sock
staticPodPath: @DIR@/manifests
fileCheckFrequency: 1s
syncFrequency: 10s
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: @CGROUP@
failCgroupV1: false
failSwapOn: false
podLogsDir: @DIR@/log/pods
makeIPTablesUtilChains: false
protectKernelDefaults: false
address: 127.0.0.1
port: @PORT@
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: @HEALTHZ@
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
`)
}
