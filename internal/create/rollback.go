package create

// rollback undoes what the plan took, last first.
func (c *creation) rollback() {
	for i := len(c.p.undo) - 1; i >= 0; i-- {
		if err := c.p.undo[i](); err != nil {
			c.Log.Warnf("container %s: cleanup after a failed %s: %v", c.id, c.Inv.Command, err)
		}
	}
	c.p.undo = nil
}
