package sshconsole

import (
	"runtime"
	"slices"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
)

// BenchmarkSSHKeyLatency is the time from a key sent over SSH on loopback
// to the first bytes of the console's answer (the next frame), one key at
// a time: switching between two views, each a whole new frame. Reported
// as key-p50-ms and key-p99-ms (target: p99 < 30 ms).
func BenchmarkSSHKeyLatency(b *testing.B) {
	f := newFixture(b, func(c *Config) { c.Now = time.Now })
	alice := f.identity("alice", registry.RoleOperator, "")
	con := f.console(f.mustDial(alice), nil)
	con.waitFor(b, "ssh:alice")
	time.Sleep(200 * time.Millisecond) // the first frames and the terminal queries settle
	lat := make([]time.Duration, 0, b.N)
	keys := []string{"2", "1"}
	b.ResetTimer()
	for i := range b.N {
		before := con.size()
		select { // drop a signal of output before the key
		case <-con.grew:
		default:
		}
		start := time.Now()
		if _, err := con.in.Write([]byte(keys[i%2])); err != nil {
			b.Fatal(err)
		}
		for con.size() == before {
			select {
			case <-con.grew:
			case <-time.After(5 * time.Second):
				b.Fatalf("no frame after key %d", i)
			}
		}
		lat = append(lat, time.Since(start))
		// Let the frame finish before the next key, as a person would.
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "key-p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "key-p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSSHSessionMemory is the heap each open console session over SSH
// takes, once its first frame is drawn (client side included: an upper
// bound). Reported as MiB/session (target < 10 MiB).
func BenchmarkSSHSessionMemory(b *testing.B) {
	const sessions = 16
	f := newFixture(b, func(c *Config) { c.MaxSessions = sessions })
	alice := f.identity("alice", registry.RoleOperator, "")
	b.ResetTimer()
	var perSession float64
	for range b.N {
		before := heapInUse()
		var open []*console
		var clients []*gossh.Client
		for range sessions {
			c, err := f.dial(gossh.PublicKeys(alice))
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
			con := f.console(c, nil)
			con.waitFor(b, "ssh:alice")
			open = append(open, con)
		}
		time.Sleep(200 * time.Millisecond)
		after := heapInUse()
		perSession = float64(after-before) / sessions / (1 << 20)
		b.StopTimer()
		for i, con := range open {
			con.in.Write([]byte("q"))
			con.waitEnd(b)
			clients[i].Close()
		}
		b.StartTimer()
	}
	b.ReportMetric(perSession, "MiB/session")
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
