//go:build conformance

package boshagent

import "encoding/json"

// Stemcell is what differs between the two stemcell lines the runs use.
type Stemcell struct {
	// ServiceManager is agent.json's Platform.Linux.ServiceManager: ""
	// is runit's sv (Jammy), "systemd" runs systemctl kill|start monit
	// (Noble).
	ServiceManager string
	IP, Netmask    string
	Gateway, MAC   string
}

// Network is the settings' default network, which the director repeats
// in the apply spec.
func (s Stemcell) Network() map[string]any {
	return map[string]any{"type": "manual", "ip": s.IP, "netmask": s.Netmask, "gateway": s.Gateway,
		"default": []string{"dns", "gateway"}, "dns": []string{}, "mac": s.MAC, "cloud_properties": map[string]any{}}
}

// MbusURL is the agent's mbus in its settings (it listens on every
// address); a client replaces the host with where it reaches it.
const MbusURL = "https://mbus:conformance-password@0.0.0.0:6868"

// AgentJSON is /var/vcap/bosh/agent.json: the File settings source, and no
// disk setup (the rigs have no disks for the agent to partition).
func (s Stemcell) AgentJSON() []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"Platform": map[string]any{"Linux": map[string]any{
			"UseDefaultTmpDir": true, "UsePreformattedPersistentDisk": true, "BindMountPersistentDisk": false,
			"SkipDiskSetup": true, "ServiceManager": s.ServiceManager}},
		"Infrastructure": map[string]any{"Settings": map[string]any{
			"Sources":     []any{map[string]any{"Type": "File", "SettingsPath": "/var/vcap/bosh/settings-source.json"}},
			"UseRegistry": false}},
	}, "", " ")
	return b
}

// Settings is the File source's settings: create-env's local blobstore
// path (the agent keeps uploaded blobs in its own store), the mbus with
// its certificate, one manual network.
func (s Stemcell) Settings(cert MbusCert) []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"agent_id":  "vigil-conformance-0",
		"blobstore": map[string]any{"provider": "local", "options": map[string]any{"blobstore_path": "/var/vcap/micro_bosh/data/cache"}},
		"disks":     map[string]any{"system": "", "ephemeral": "", "persistent": map[string]any{}},
		"env":       map[string]any{"bosh": map[string]any{"password": "", "mbus": map[string]any{"cert": cert}}},
		"networks":  map[string]any{"default": s.Network()},
		"ntp":       []string{},
		"mbus":      MbusURL,
		"vm":        map[string]any{"name": "vm-vigil-conformance-0"},
	}, "", " ")
	return b
}
