package control

import "context"

type requesterKey struct{}

// WithRequester returns ctx naming who asked for what is done under it
// ("uid 0 (bpm, pid 4242)", "page user admin"). A back end publishes an
// EventAction for an action, signal or reload whose context names one.
func WithRequester(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, requesterKey{}, who)
}

// Requester is who ctx says asked, "" when it names no one (the daemon's
// own doing: the first load, a shutdown).
func Requester(ctx context.Context) string {
	who, _ := ctx.Value(requesterKey{}).(string)
	return who
}
