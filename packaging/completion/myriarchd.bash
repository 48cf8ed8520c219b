# bash completion for myriarchd: source <(myriarchd completion bash)
_myriarchd_complete() {
	local IFS=$'\n'
	COMPREPLY=($(myriarchd __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _myriarchd_complete myriarchd
