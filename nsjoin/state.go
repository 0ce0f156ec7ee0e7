package nsjoin

// execFifo exists in a container's state directory from `runc create`
// until `runc start`: runc's own test for "created".
const execFifo = "exec.fifo"
