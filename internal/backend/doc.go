// Package backend is the layer below vigil's two back ends, the native
// supervisor (daemon) and systemd's units (systemd): what both need, so
// that neither borrows from the other. It reads the jobs into one
// configuration with its problems (file, line and field), maps a bpm
// process onto its supervision (probes, restart policy), plans a reload
// (Plan: what starts, stops, restarts and stays, a pure function), derives
// the event stream from successive statuses and fans it out (Hub), fills
// statuses with resource use from a shared pass over /proc (UsageCache),
// and wakes watchers of changes (Notifier).
package backend
