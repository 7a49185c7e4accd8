package vmrig

import (
	"slices"
	"strings"
	"testing"
)

// TestForwardGivesTheGuestANIC: without Forward the guest has no network
// device; with it, one virtio NIC with GuestMAC on qemu's user network,
// each host port forwarded from 127.0.0.1 (never every address) to its
// guest port, in port order.
func TestForwardGivesTheGuestANIC(t *testing.T) {
	img := Image{Disk: "d", Kernel: "k", Initrd: "i"}
	plain := Machine{Image: img, Share: "s"}.args("tcg")
	for _, a := range plain {
		if strings.Contains(a, "netdev") || strings.Contains(a, "virtio-net") {
			t.Fatalf("a network device without Forward: %q", plain)
		}
	}
	a := Machine{Image: img, Share: "s", Forward: map[int]int{40001: 6868, 40000: 22}}.args("tcg")
	i := slices.Index(a, "-netdev")
	if i < 0 || i+3 >= len(a) {
		t.Fatalf("no -netdev: %q", a)
	}
	if want := "user,id=net0,hostfwd=tcp:127.0.0.1:40000-:22,hostfwd=tcp:127.0.0.1:40001-:6868"; a[i+1] != want {
		t.Errorf("-netdev %s, want %s", a[i+1], want)
	}
	if a[i+2] != "-device" || a[i+3] != "virtio-net-pci,netdev=net0,mac="+GuestMAC {
		t.Errorf("the NIC: %q", a[i+2:i+4])
	}
}
