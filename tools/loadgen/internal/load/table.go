package load

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
)

// DropTable disables and deletes an HBase table a measurement delayd used
// (stop that delayd first). A table that does not exist is not an error.
func DropTable(ctx context.Context, zk, zkRoot, table string) error {
	// gohbase's admin client has no working Close; the process ends soon.
	ac := gohbase.NewAdminClient(zk, gohbase.ZookeeperRoot(zkRoot), gohbase.Logger(slog.New(slog.DiscardHandler)))
	if err := ac.DisableTable(hrpc.NewDisableTable(ctx, []byte(table))); err != nil &&
		!strings.Contains(err.Error(), "TableNotFoundException") &&
		!strings.Contains(err.Error(), "TableNotEnabledException") {
		return fmt.Errorf("load: disable table %s: %w", table, err)
	}
	if err := ac.DeleteTable(hrpc.NewDeleteTable(ctx, []byte(table))); err != nil &&
		!strings.Contains(err.Error(), "TableNotFoundException") {
		return fmt.Errorf("load: delete table %s: %w", table, err)
	}
	return nil
}
