package wsconn

func addPlatformPollers(kinds map[string]func(Options) Poller) {
	kinds["epoll"] = func(o Options) Poller {
		p, err := newEpoller(o)
		if err != nil {
			panic(err)
		}
		return p
	}
}
