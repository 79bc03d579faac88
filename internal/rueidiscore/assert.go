package rueidiscore

// The types of the compile-time checks that every node implements
// driver.Node, driver.Fencer, driver.Notifier and driver.TTLer (see optional.go): a
// library whose client does nothing.
type (
	nopClient    struct{}
	nopDedicated struct{}
	nopResult    struct{}
)

func (nopClient) Nodes() map[string]nopClient      { return nil }
func (nopClient) Dedicate() (nopDedicated, func()) { return nopDedicated{}, func() {} }
func (nopClient) Close()                           {}
func (nopDedicated) Close()                        {}
func (nopResult) ToAny() (any, error)              { return nil, nil }
func (nopResult) ToString() (string, error)        { return "", nil }
func (nopResult) Error() error                     { return nil }
