package download

import (
	"hash"
	"sync"
	"sync/atomic"
)

// hashPipe feeds every chunk to each hash in its own goroutine, so hashing
// (SHA-256 and, for minisign, BLAKE2b-512) overlaps with network reads and
// disk writes instead of serialising behind them. Buffers come from a fixed
// pool, so memory use is bounded whatever the artifact size.
type hashPipe struct {
	hashes []hash.Hash
	in     []chan *chunk
	pool   chan *chunk
	nbuf   int
	wg     sync.WaitGroup
	closed bool
}

type chunk struct {
	buf  []byte
	n    int
	refs atomic.Int32
}

const (
	chunkSize = 256 << 10
	chunkNum  = 8
)

func newHashPipe(hashes ...hash.Hash) *hashPipe {
	p := &hashPipe{hashes: hashes, pool: make(chan *chunk, chunkNum), nbuf: chunkNum}
	for range chunkNum {
		p.pool <- &chunk{buf: make([]byte, chunkSize)}
	}
	for _, h := range hashes {
		ch := make(chan *chunk, chunkNum)
		p.in = append(p.in, ch)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for c := range ch {
				h.Write(c.buf[:c.n])
				p.release(c)
			}
		}()
	}
	return p
}

// get returns a free buffer, waiting for the hashers if all are in use.
func (p *hashPipe) get() *chunk { return <-p.pool }

func (p *hashPipe) release(c *chunk) {
	if c.refs.Add(-1) <= 0 {
		p.pool <- c
	}
}

// submit hands c (holding c.n bytes) to every hash; c returns to the pool
// when all of them are done.
func (p *hashPipe) submit(c *chunk) {
	if c.n == 0 || len(p.in) == 0 {
		c.refs.Store(0)
		p.pool <- c
		return
	}
	c.refs.Store(int32(len(p.in)))
	for _, ch := range p.in {
		ch <- c
	}
}

// drain waits until every submitted chunk is hashed.
func (p *hashPipe) drain() {
	held := make([]*chunk, 0, p.nbuf)
	for range p.nbuf {
		held = append(held, <-p.pool)
	}
	for _, c := range held {
		p.pool <- c
	}
}

// reset drains and restarts every hash from zero (a resume the server
// answered with the whole file).
func (p *hashPipe) reset() {
	p.drain()
	for _, h := range p.hashes {
		h.Reset()
	}
}

// close drains and stops the hash goroutines; the hashes can then be summed.
func (p *hashPipe) close() {
	if p.closed {
		return
	}
	p.closed = true
	p.drain()
	for _, ch := range p.in {
		close(ch)
	}
	p.wg.Wait()
}
