# fish completion for myriarchd: myriarchd completion fish | source
complete -c myriarchd -f -a '(myriarchd __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
