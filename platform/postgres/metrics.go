package postgres

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exports the postgres_pool_* metrics (docs/operations.md
// "Metrics") from pgxpool.Stat at scrape time. A process has one pool;
// the one-process dev stack has one per service, and their figures are
// summed: they are the process's connections to the server.
type PoolCollector struct {
	pools       []*pgxpool.Pool
	connections *prometheus.Desc
	max         *prometheus.Desc
	acquires    *prometheus.Desc
	waits       *prometheus.Desc
	waitSeconds *prometheus.Desc
}

// NewPoolCollector returns the collector of pools; register it once per
// registry.
func NewPoolCollector(pools ...*pgxpool.Pool) *PoolCollector {
	return &PoolCollector{
		pools:       pools,
		connections: prometheus.NewDesc("postgres_pool_connections", "The pool's connections by state.", []string{"state"}, nil),
		max:         prometheus.NewDesc("postgres_pool_max_connections", "The pool's size.", nil, nil),
		acquires:    prometheus.NewDesc("postgres_pool_acquires_total", "Connections handed out by the pool.", nil, nil),
		waits:       prometheus.NewDesc("postgres_pool_waits_total", "Acquires that had to wait for a connection.", nil, nil),
		waitSeconds: prometheus.NewDesc("postgres_pool_wait_seconds_total", "Time spent waiting for a connection.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connections, c.max, c.acquires, c.waits, c.waitSeconds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Stat takes each pool's lock
// briefly; a scrape does it once per pool.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	var idle, acquired, constructing, maxConns, acquires, waits int64
	var waited float64
	for _, p := range c.pools {
		s := p.Stat()
		idle += int64(s.IdleConns())
		acquired += int64(s.AcquiredConns())
		constructing += int64(s.ConstructingConns())
		maxConns += int64(s.MaxConns())
		acquires += s.AcquireCount()
		waits += s.EmptyAcquireCount()
		waited += s.EmptyAcquireWaitTime().Seconds()
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.connections, float64(idle), "idle")
	gauge(c.connections, float64(acquired), "acquired")
	gauge(c.connections, float64(constructing), "constructing")
	gauge(c.max, float64(maxConns))
	counter(c.acquires, float64(acquires))
	counter(c.waits, float64(waits))
	counter(c.waitSeconds, waited)
}
