package main

import (
	"fmt"
	"os"
)

// The completion scripts. Each asks `vigil __complete` (the binary the
// command line names) for the candidates, so all three follow the one set
// of command definitions; a ":dir" or ":file" answer hands the word to the
// shell's own path completion.
const (
	bashCompletion = `# bash completion for vigil; load it with: source <(vigil completion bash)
_vigil() {
	local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n' out
	out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null) || return
	case $out in
	:dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
	:file) COMPREPLY=($(compgen -f -- "$cur")) ;;
	*) COMPREPLY=($(compgen -W "$out" -- "$cur")) ;;
	esac
}
complete -F _vigil vigil
`
	zshCompletion = `#compdef vigil
# zsh completion for vigil: vigil completion zsh > "${fpath[1]}/_vigil"
_vigil() {
	local out
	local -a cands
	out=$("${words[1]}" __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null) || return
	case $out in
	:dir) _files -/ ;;
	:file) _files ;;
	*) cands=("${(@f)out}"); compadd -a cands ;;
	esac
}
if [[ $funcstack[1] == _vigil ]]; then
	_vigil "$@"
else
	compdef _vigil vigil
fi
`
	fishCompletion = `# fish completion for vigil: vigil completion fish > ~/.config/fish/completions/vigil.fish
function __vigil_complete
	set -l words (commandline -opc)
	set -l cur (commandline -ct)
	set -l out ($words[1] __complete $words[2..-1] "$cur" 2>/dev/null)
	if test "$out[1]" = ":dir"
		__fish_complete_directories "$cur"
	else if test "$out[1]" = ":file"
		__fish_complete_path "$cur"
	else
		printf '%s\n' $out
	end
end
complete -c vigil -f -a '(__vigil_complete)'
`
)

func defineCompletion(c *command) func([]string) error {
	return func(pos []string) error {
		scripts := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}
		script, ok := scripts[pos[0]]
		if !ok {
			return c.usagef("no completion for %q: bash, zsh or fish", pos[0])
		}
		_, err := fmt.Fprint(os.Stdout, script)
		return err
	}
}
