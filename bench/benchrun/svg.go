package benchrun

import (
	"fmt"
	"html"
	"slices"
	"strings"
)

// chartCases are the cases the chart shows, in order: the headline, and the
// one-node case in which the single-node peers run too.
var chartCases = []string{Headline, "Lock/nodes=1/lockers=64"}

// Colours of the bars by kind of contender.
var kindColour = map[Kind]string{
	KindDriver: "#2b6cb0",
	KindFloor:  "#a0aec0",
	KindPeer:   "#dd6b20",
}

// Chart geometry, in pixels.
const (
	chartWidth = 960
	labelRight = 195 // right edge of the contender labels
	panel1     = 205 // left edge of the throughput bars
	panel2     = 590 // left edge of the p99 bars
	barMax     = 280 // longest bar; its value is written after it
	rowHeight  = 20
	barHeight  = 14
)

// SVG renders a bar chart of the throughput and p99 latency of each contender
// over Redis in the chart's cases (the headline first), drawn by hand so that
// it needs nothing but the standard library.
func (r *Report) SVG() []byte {
	var body strings.Builder
	y := 30
	text := func(x, y int, anchor, style, s string) {
		fmt.Fprintf(&body, `<text x="%d" y="%d" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, style, html.EscapeString(s))
	}
	text(10, y, "start", ` font-size="16" font-weight="bold"`, "go-redlock: lock+unlock per contender")
	y += 18
	rounds := "one round"
	if r.Config.Rounds != 1 {
		rounds = fmt.Sprintf("median of %d rounds", r.Config.Rounds)
	}
	if r.Incomplete != "" {
		rounds += " · incomplete: " + r.Incomplete
	}
	text(10, y, "start", ` fill="#4a5568"`, fmt.Sprintf("%s · %s, GOMAXPROCS %d · redis-server %s · %s",
		r.Env.Date.Format("2006-01-02"), r.Env.CPU, r.Env.GOMAXPROCS, r.Env.Redis, rounds))
	y += 22
	x := 10
	for _, k := range []struct {
		kind Kind
		name string
	}{{KindDriver, "redlock driver"}, {KindFloor, "floor: bare client, no lock logic"}, {KindPeer, "other library"}} {
		fmt.Fprintf(&body, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", x, y-10, kindColour[k.kind])
		text(x+16, y, "start", "", k.name)
		x += 40 + 7*len(k.name)
	}
	y += 14
	groups := groupByCase(r.Results)
	for _, c := range chartCases {
		i := slices.IndexFunc(groups, func(g []*Result) bool { return g[0].Case+"/"+g[0].Params == c })
		if i < 0 {
			continue
		}
		// Only contenders over Redis: the memory driver's in-process figures
		// would flatten every other bar.
		g := slices.DeleteFunc(slices.Clone(groups[i]), func(res *Result) bool { return res.Client == "" })
		if len(g) == 0 {
			continue
		}
		y += 22
		text(10, y, "start", ` font-size="14" font-weight="bold"`, strings.Split(title(g[0]), " (")[0])
		y += 18
		text(panel1, y, "start", ` fill="#4a5568"`, "throughput, ops/s (longer is better)")
		text(panel2, y, "start", ` fill="#4a5568"`, "p99 latency (shorter is better)")
		y += 6
		var maxOps, maxP99 float64
		for _, res := range g {
			maxOps = max(maxOps, res.Median[OpsPerSec])
			maxP99 = max(maxP99, res.Median[P99])
		}
		for _, res := range g {
			m := res.Median
			colour := kindColour[res.Kind]
			style := ""
			if res.Kind == KindDriver {
				style = ` font-weight="bold"`
			}
			text(labelRight, y+barHeight-2, "end", style, res.Label())
			bar := func(left int, v, maxV float64, label string) {
				w := 0
				if maxV > 0 {
					w = int(v / maxV * barMax)
				}
				fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, max(w, 1), barHeight, colour)
				text(left+max(w, 1)+5, y+barHeight-2, "start", "", label)
			}
			bar(panel1, m[OpsPerSec], maxOps, formatCount(m[OpsPerSec]))
			bar(panel2, m[P99], maxP99, formatNs(m[P99]))
			y += rowHeight
		}
	}
	y += 16
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartWidth, y, chartWidth, y)
	fmt.Fprintf(&out, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	out.WriteString(body.String())
	out.WriteString("</svg>\n")
	return []byte(out.String())
}
