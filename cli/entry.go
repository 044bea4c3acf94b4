package cli

// Main runs the dpfil command line on os.Args and exits with its status.
func Main() { main() }
