package kuberig

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKubeletEvents reads klog's lines about a pod, a value of many
// lines included.
func TestKubeletEvents(t *testing.T) {
	r := &Rig{dir: t.TempDir()}
	os.MkdirAll(filepath.Join(r.dir, "log"), 0o755)
	log := `I1204 18:40:24.344809   17017 kuberuntime_container.go:740] "Running preStop hook" pod="default/p-kuberig" podUID="23e7" containerName="a" containerID="containerd://c5a1"
E1204 18:40:29.414502   17017 kuberuntime_container.go:748] "PreStop hook failed" err=<
	command '/usr/local/bin/vigil drain' exited with 1: 1 of 1 drain scripts failed. Failed Jobs: j. Successful Jobs: .
	j: Script did not return a signed integer: printed "" (exit status 1)
 > pod="default/p-kuberig" podUID="23e7" containerName="a" containerID="containerd://c5a1"
I1204 18:40:29.414534   17017 kuberuntime_container.go:866] "Killing container with a grace period" pod="default/other-kuberig" containerName="b" gracePeriod=30
`
	os.WriteFile(filepath.Join(r.dir, "log", "kubelet.log"), []byte(log), 0o644)
	evs, err := r.KubeletEvents("p")
	if err != nil || len(evs) != 2 {
		t.Fatalf("%+v %v", evs, err)
	}
	want := "command '/usr/local/bin/vigil drain' exited with 1: 1 of 1 drain scripts failed. Failed Jobs: j. Successful Jobs: .\nj: Script did not return a signed integer: printed \"\" (exit status 1)"
	if evs[1].Msg != "PreStop hook failed" || evs[1].Fields["err"] != want || evs[1].Fields["containerName"] != "a" ||
		evs[0].Fields["containerName"] != "a" || evs[1].Time.Sub(evs[0].Time).Seconds() < 5.06 {
		t.Fatalf("%+v\n%q", evs, evs[1].Fields["err"])
	}
}
